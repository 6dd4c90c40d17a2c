// The same forwarding as worker.js with no guard: the baseline the guard's
// cost is measured against (BENCHMARKS.md). The same rules (forward.js).
import { route, send } from './forward.js';

export default {
  async fetch(request, env) {
    const { url: upstream, response: refused } = route(request, env);
    if (refused) return refused;
    return send(env, upstream, request, request.body);
  },
};
