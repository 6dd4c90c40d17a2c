//! The content budget `install` gives each host's servers (`--clip`), so
//! that what the agent sees inline is drainpipe's condensed result, with its
//! notice and its links to the rest, and not the host's own cut of it (or a
//! refusal, or a file the agent is pointed to).
//!
//! Each host caps a tool result in its own unit (see the README's table and
//! its sources). `--clip` counts bytes on the wire, and every unit a host
//! counts takes at least one of those bytes: a character of the decoded
//! text (one UTF-16 unit, as the TypeScript hosts count `String.length`, or
//! one code point) is one byte or more in UTF-8, more once JSON escapes it,
//! and a token of a byte-level tokenizer covers at least one byte of the
//! text. So a byte budget equal to the host's cap in its own unit keeps the
//! result under the cap in any of them. It is conservative for characters
//! and tokens (a token is about four bytes of English text): `--clip` does
//! not count in those units yet.

use super::hosts::Host;

/// A budget and why it was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The `--clip` value, as written into the config.
    pub(crate) clip: &'static str,
    /// The host's cap and where it is set, in a sentence.
    pub(crate) why: &'static str,
}

/// For a host whose cap is not published, and for `--config`: a quarter of
/// a MiB, which keeps a result readable at a glance and leaves the rest to
/// `drainpipe_read`.
pub(crate) const DEFAULT: Budget = Budget {
    clip: "256KiB",
    why: "the default: this host publishes no cap on a tool result",
};

impl Host {
    /// The budget for this host's servers.
    pub(crate) fn budget(self) -> Budget {
        match self {
            Host::ClaudeDesktop => Budget {
                clip: "1MB",
                why: "Claude Desktop refuses a tool result over 1 MB (\"Tool result is too large\")",
            },
            Host::ClaudeCode => Budget {
                clip: "25000",
                why: "Claude Code caps a result at 25,000 tokens (MAX_MCP_OUTPUT_TOKENS) and moves \
                      one over 50,000 characters to a file; 25,000 bytes is under both",
            },
            Host::Codex => Budget {
                clip: "10000",
                why: "Codex cuts a result past ~10,000 tokens, or 10,000 bytes for some models \
                      (tool_output_token_limit), keeping head and tail and nothing to read back",
            },
            Host::Gemini => Budget {
                clip: "40000",
                why: "Gemini CLI moves a result over 40,000 characters to a file \
                      (tools.truncateToolOutputThreshold)",
            },
            Host::VsCode => Budget {
                clip: "8000",
                why: "VS Code moves a result over 8 KB to a temp file with a preview \
                      (chat.agent.largeToolResultsToDisk.thresholdBytes)",
            },
            Host::Cursor | Host::Zed | Host::Windsurf => DEFAULT,
        }
    }
}

/// Whether proxy options already say `--clip` (then they win: the user
/// chose).
pub(crate) fn names_clip(proxy_args: &[String]) -> bool {
    proxy_args
        .iter()
        .any(|word| word == "--clip" || word.starts_with("--clip="))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::size::parse_size;

    #[test]
    fn every_budget_parses_and_has_room_for_links() {
        let all = Host::ALL.iter().map(|host| host.budget()).chain([DEFAULT]);
        for budget in all {
            let bytes = parse_size(budget.clip).unwrap();
            assert!(
                bytes >= drainpipe_framer::budget::MIN_LINKED_BUDGET,
                "{}: {bytes} bytes leaves no room for links",
                budget.clip
            );
        }
    }

    #[test]
    fn a_budget_is_never_over_the_cap_it_names() {
        // The caps in the hosts' own units (the smaller where two are named).
        let caps = [
            (Host::ClaudeDesktop, 1_000_000),
            (Host::ClaudeCode, 25_000),
            (Host::Codex, 10_000),
            (Host::Gemini, 40_000),
            (Host::VsCode, 8_000),
        ];
        for (host, cap) in caps {
            assert!(parse_size(host.budget().clip).unwrap() <= cap, "{host:?}");
        }
    }

    #[test]
    fn a_clip_the_user_wrote_is_seen() {
        let words = |text: &str| text.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert!(names_clip(&words("--max-frame 8MiB --clip 64KiB")));
        assert!(names_clip(&words("--clip=64KiB")));
        assert!(!names_clip(&words("--max-frame 8MiB")));
        assert!(!names_clip(&[]));
    }
}
