//! `drainpipe install` and `drainpipe uninstall`: put `drainpipe proxy` in
//! front of every stdio MCP server a host starts, in the host's own config
//! files, and take it away again.
//!
//! This commit holds the format-preserving editors only:
//! - `wrap`: what wrapping means, whatever the format;
//! - `jsonc`: JSON and JSON-with-comments files, edited by splicing text at
//!   the byte ranges the parser reports;
//! - `toml`: Codex's `config.toml`, edited with `toml_edit`.
// The subcommands that use them come next.
#![allow(dead_code)]

mod jsonc;
mod toml;
mod wrap;
