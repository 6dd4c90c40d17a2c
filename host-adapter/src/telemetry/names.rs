//! The names drainpipe records under: the MCP semantic conventions where
//! they have a name (status: development), and the `drainpipe.*`
//! namespace, in the same style, for what they have none for (sizes,
//! limits, condensing, spilling, backpressure). The README's table lists
//! them with their units.

// The MCP convention's span attributes.
/// The request's method (`tools/call`).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// The protocol revision of the request (its `_meta`, 2026-07-28) or of
/// the session (`initialize`'s answer).
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `resources/read`'s URI.
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
/// The request's id as written (not recorded for `null`).
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// The tool of a `tools/call`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// The prompt of a `prompts/get`.
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `execute_tool` for `tools/call`.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// `pipe`: stdio; `tcp`: a remote server (`proxy --url`).
pub const NETWORK_TRANSPORT: &str = "network.transport";
/// A remote server's host name or address, as its URL names it.
pub const SERVER_ADDRESS: &str = "server.address";
/// A remote server's port (the scheme's when its URL names none).
pub const SERVER_PORT: &str = "server.port";
/// The JSON-RPC error code as a string, `tool_error` for a result with
/// `isError`, `cancelled` for a request the host cancelled, `unanswered`
/// for one the session ended before.
pub const ERROR_TYPE: &str = "error.type";
/// The JSON-RPC error code of an error response.
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";

// The MCP convention's metrics.
/// Seconds from a request to its answer, as the proxy saw them.
pub const MCP_CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// Seconds of a session.
pub const MCP_CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";

// drainpipe's span attributes.
/// Bytes of the request line as the host wrote it.
pub const REQUEST_SIZE: &str = "drainpipe.request.size";
/// Bytes of the answer as the server wrote it (over the transport limit
/// too: counted, never held).
pub const RESPONSE_SIZE: &str = "drainpipe.response.size";
/// Whether the result was condensed to the content budget.
pub const RESPONSE_CONDENSED: &str = "drainpipe.response.condensed";
/// Bytes of the condensed result the host got.
pub const RESPONSE_KEPT_SIZE: &str = "drainpipe.response.kept_size";
/// Values of the result kept whole in the spill store and linked.
pub const RESPONSE_SPILLED_VALUES: &str = "drainpipe.response.spilled_values";
/// `proxy` when drainpipe answered the request itself (an error: the
/// answer passed the transport limit, could not be condensed, or the
/// server ended), not the server.
pub const ANSWERED_BY: &str = "drainpipe.answered_by";
/// The transport limit, in bytes (session span; also a gauge).
pub const TRANSPORT_LIMIT: &str = "drainpipe.transport.limit";
/// The content budget, e.g. `50000 characters` (session span).
pub const CONTENT_BUDGET: &str = "drainpipe.content.budget";
/// The server's exit code (session span).
pub const SERVER_EXIT_CODE: &str = "drainpipe.server.exit_code";
/// Which way a message went: `host_to_server` or `server_to_host`.
pub const DIRECTION: &str = "drainpipe.direction";

// drainpipe's metrics, all per session (the resource names the service).
/// Bytes of each `tools/call` result as the server wrote it (histogram).
pub const RESULT_SIZE: &str = "drainpipe.result.size";
/// Bytes of each condensed result the host got (histogram).
pub const RESULT_KEPT_SIZE: &str = "drainpipe.result.kept_size";
/// Bytes read, per direction.
pub const MESSAGE_BYTES: &str = "drainpipe.message.bytes";
/// Messages forwarded, per direction.
pub const MESSAGES: &str = "drainpipe.messages";
/// The largest message forwarded, per direction (gauge).
pub const MESSAGE_LARGEST: &str = "drainpipe.message.largest";
/// Lines rejected for passing the transport limit, per direction.
pub const MESSAGE_OVERSIZE: &str = "drainpipe.message.oversize";
/// Lines that were not valid JSON-RPC, per direction.
pub const MESSAGE_MALFORMED: &str = "drainpipe.message.malformed";
/// Results condensed to the content budget.
pub const RESULTS_CONDENSED: &str = "drainpipe.results.condensed";
/// Results over the budget that could not be condensed (answered with an
/// error).
pub const RESULTS_CONDENSE_FAILED: &str = "drainpipe.results.condense_failed";
/// Cut values kept in the spill store and linked.
pub const SPILL_VALUES: &str = "drainpipe.spill.values";
/// Bytes in the spill store now (gauge).
pub const SPILL_BYTES: &str = "drainpipe.spill.bytes";
/// Values evicted from the spill store to stay within its quota.
pub const SPILL_EVICTIONS: &str = "drainpipe.spill.evictions";
/// Seconds a reader waited for room in its queue, per direction: for
/// `server_to_host`, the time the server's output was held up by a host
/// that did not read (the stall this project exists to bound).
pub const BACKPRESSURE: &str = "drainpipe.backpressure.duration";
/// `notifications/cancelled` forwarded to the server.
pub const CANCELLATIONS: &str = "drainpipe.cancellations";
/// Times the server's process tree had to be killed (SIGKILL, or the job
/// ended on Windows) rather than exiting.
pub const TREE_KILLS: &str = "drainpipe.process.kills";
/// Errors drainpipe answered itself, instead of the peer.
pub const ERRORS_SENT: &str = "drainpipe.errors.sent";
