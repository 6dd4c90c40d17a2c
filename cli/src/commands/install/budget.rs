//! The content budget `install` gives each host's servers (`--clip`), so
//! that what the agent sees inline is drainpipe's condensed result, with its
//! notice and its links to the rest, and not the host's own cut of it (or a
//! refusal, or a file the agent is pointed to).
//!
//! Each host caps a tool result in its own unit (see the README's table and
//! its sources), and the budget is written in that unit where `--clip` has
//! it: bytes, characters (UTF-16 units, as the TypeScript hosts count
//! `String.length`) or tokens. Where a host names two caps, the budget
//! keeps the tighter one for text. Codex counts tokens for some models and
//! bytes for others: bytes there, which keeps it under both (every token
//! covers at least one byte).

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
                clip: "50000chars",
                why: "Claude Code moves a result over 50,000 characters to a file and caps one at \
                      25,000 tokens (MAX_MCP_OUTPUT_TOKENS); for text the characters bind first \
                      (about 12,500 tokens of prose)",
            },
            Host::Codex => Budget {
                clip: "10000",
                why: "Codex cuts a result past ~10,000 tokens, or 10,000 bytes for some models \
                      (tool_output_token_limit), keeping head and tail and nothing to read back",
            },
            Host::Gemini => Budget {
                clip: "40000chars",
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
    use crate::commands::size::parse_clip;
    use drainpipe_framer::budget::{Clip, Unit};

    #[test]
    fn every_budget_parses_and_has_room_for_links() {
        let all = Host::ALL.iter().map(|host| host.budget()).chain([DEFAULT]);
        for budget in all {
            // Links go in the smallest rung that has room (the amount, as
            // bytes, for any unit).
            let clip = parse_clip(budget.clip).unwrap();
            assert!(
                clip.amount >= drainpipe_framer::budget::MIN_LINKED_BUDGET,
                "{}: leaves no room for links",
                budget.clip
            );
        }
    }

    #[test]
    fn a_budget_is_never_over_the_cap_it_names() {
        // The caps in the hosts' own units (the tighter for text where two
        // are named).
        let caps = [
            (Host::ClaudeDesktop, Clip::bytes(1_000_000)),
            (Host::ClaudeCode, Clip::chars(50_000)),
            (Host::Codex, Clip::tokens(10_000)),
            (Host::Gemini, Clip::chars(40_000)),
            (Host::VsCode, Clip::bytes(8_000)),
        ];
        for (host, cap) in caps {
            let clip = parse_clip(host.budget().clip).unwrap();
            // A byte budget is within a cap in any unit; otherwise the
            // units must agree.
            assert!(
                clip.amount <= cap.amount && (clip.unit == cap.unit || clip.unit == Unit::Bytes),
                "{host:?}"
            );
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
