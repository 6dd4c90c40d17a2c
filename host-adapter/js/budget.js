// The result budget for JavaScript (see `interface budget` in
// wit/framer.wit): condensing a tools/call response of any size to a budget
// in bytes, characters or tokens as it streams, and bounded capture of an output
// stream. A separate
// entry point because its component is larger than the framer's.
//
//   import { Condenser, condense, Capture } from 'drainpipe-framer/budget';
import { MIN_CONDENSE_BUDGET, bindBudget } from './budget-core.js';
import { budget } from './dist/drainpipe/drainpipe.js';

export { MIN_CONDENSE_BUDGET };

// The classes are documented in budget-core.js and budget.d.ts.
export const { Condenser, condense, Capture } = bindBudget(budget);
