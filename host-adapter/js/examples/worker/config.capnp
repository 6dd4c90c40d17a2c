# workerd serves the guard in front of an MCP server:
#
#   UPSTREAM_URL=http://127.0.0.1:3000/mcp workerd serve config.capnp \
#       --socket-addr http=127.0.0.1:8787 --external-addr upstream=127.0.0.1:3000
#
# The `upstream` service is where the bytes go (workerd reaches loopback
# only through a service); UPSTREAM_URL, read from the environment, is the
# URL they are sent to, and so the Host the server sees: give both the
# same address. Without UPSTREAM_URL the server sees the Host the client
# used, the worker's own. ALLOWED_HOSTS keeps the DNS rebinding check a
# loopback server makes on Host, which it no longer sees (forward.js).
#
# (`config` is the guard; `passthrough` the same forwarding unguarded.)
# The package's files are embedded under the names the worker imports:
# workerd imports each `.wasm` as a compiled module, statically.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "guard", worker = .guard),
    (name = "upstream", external = (address = "127.0.0.1:3000", http = ())),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "guard")],
);

const passthrough :Workerd.Config = (
  services = [
    (name = "plain", worker = .plain),
    (name = "upstream", external = (address = "127.0.0.1:3000", http = ())),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "plain")],
);

const guard :Workerd.Worker = (
  compatibilityDate = "2025-09-01",
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "forward.js", esModule = embed "forward.js"),
    (name = "drainpipe-framer/edge/index.js", esModule = embed "../../edge/index.js"),
    (name = "drainpipe-framer/edge/guard.js", esModule = embed "../../edge/guard.js"),
    (name = "drainpipe-framer/budget-core.js", esModule = embed "../../budget-core.js"),
    (name = "drainpipe-framer/dist/edge/core-modules.js", esModule = embed "../../dist/edge/core-modules.js"),
    (name = "drainpipe-framer/dist/edge/drainpipe.js", esModule = embed "../../dist/edge/drainpipe.js"),
    (name = "drainpipe-framer/dist/edge/drainpipe.core.wasm", wasm = embed "../../dist/edge/drainpipe.core.wasm"),
    (name = "drainpipe-framer/dist/edge/drainpipe.core2.wasm", wasm = embed "../../dist/edge/drainpipe.core2.wasm"),
    (name = "drainpipe-framer/dist/edge/drainpipe.core3.wasm", wasm = embed "../../dist/edge/drainpipe.core3.wasm"),
  ],
  bindings = [
    (name = "UPSTREAM", service = "upstream"),
    # The server's URL (null when the variable is unset).
    (name = "UPSTREAM_URL", fromEnvironment = "UPSTREAM_URL"),
    # The hostnames clients may call the worker by; others get 403.
    (name = "ALLOWED_HOSTS", text = "localhost,127.0.0.1,[::1]"),
    # Bytes of one answer's data on the wire, checked before any parse.
    (name = "MAX_EVENT_BYTES", text = "33554432"),
    # A tools/call result over this many bytes is condensed to it.
    (name = "CLIP", text = "262144"),
  ],
);

const plain :Workerd.Worker = (
  compatibilityDate = "2025-09-01",
  modules = [
    (name = "passthrough.js", esModule = embed "passthrough.js"),
    (name = "forward.js", esModule = embed "forward.js"),
  ],
  bindings = [
    (name = "UPSTREAM", service = "upstream"),
    (name = "UPSTREAM_URL", fromEnvironment = "UPSTREAM_URL"),
    (name = "ALLOWED_HOSTS", text = "localhost,127.0.0.1,[::1]"),
  ],
);
