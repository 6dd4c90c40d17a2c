//! The MCP hosts `install` knows, and where each keeps its server list on
//! Linux, macOS and Windows.
//!
//! Per-project files (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`,
//! `.zed/settings.json`, `.gemini/settings.json`) are looked for in the
//! current directory only. Not covered: VS Code profiles
//! (`User/profiles/<id>/mcp.json`), servers in VS Code's `settings.json`
//! (`"mcp": {…}`, the older place), managed or enterprise policy files, and
//! hosts whose config directory was moved by a variable other than the ones
//! named below; `--config PATH` reaches any of those.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::file::Format;

/// A host application that starts MCP servers from a config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Host {
    /// Claude Desktop: `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json` (user and per-project servers) and the
    /// project's `.mcp.json`.
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json` and the project's `.cursor/mcp.json`.
    Cursor,
    /// VS Code: `mcp.json` in the user directory (stable and Insiders) and
    /// the workspace's `.vscode/mcp.json`.
    #[value(name = "vscode")]
    VsCode,
    /// Zed: `context_servers` in its `settings.json` (user and project).
    Zed,
    /// OpenAI Codex CLI: `[mcp_servers.NAME]` in `~/.codex/config.toml`
    /// (`$CODEX_HOME/config.toml` when set).
    Codex,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`.
    Windsurf,
    /// Gemini CLI: `mcpServers` in `~/.gemini/settings.json` and the
    /// project's `.gemini/settings.json`.
    Gemini,
}

impl Host {
    /// Every host, in the order reports list them.
    pub(crate) const ALL: [Host; 8] = [
        Host::ClaudeDesktop,
        Host::ClaudeCode,
        Host::Cursor,
        Host::VsCode,
        Host::Zed,
        Host::Codex,
        Host::Windsurf,
        Host::Gemini,
    ];

    /// The host's name for people.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::Cursor => "Cursor",
            Host::VsCode => "VS Code",
            Host::Zed => "Zed",
            Host::Codex => "Codex",
            Host::Windsurf => "Windsurf",
            Host::Gemini => "Gemini CLI",
        }
    }

    /// The layout of the host's files.
    pub(crate) fn format(self) -> Format {
        match self {
            Host::VsCode => Format::VsCode,
            Host::Zed => Format::Zed,
            Host::Codex => Format::Codex,
            Host::ClaudeDesktop
            | Host::ClaudeCode
            | Host::Cursor
            | Host::Windsurf
            | Host::Gemini => Format::McpServers,
        }
    }

    /// Where the host's config files are (existing or not), user files
    /// first, then the current directory's.
    pub(crate) fn files(self, places: &Places) -> Vec<PathBuf> {
        let home = &places.home;
        let config = places.config_dir();
        let mut files = match self {
            Host::ClaudeDesktop => {
                vec![config.join("Claude").join("claude_desktop_config.json")]
            }
            Host::ClaudeCode => vec![home.join(".claude.json"), places.cwd.join(".mcp.json")],
            Host::Cursor => vec![
                home.join(".cursor").join("mcp.json"),
                places.cwd.join(".cursor").join("mcp.json"),
            ],
            Host::VsCode => vec![
                config.join("Code").join("User").join("mcp.json"),
                config.join("Code - Insiders").join("User").join("mcp.json"),
                places.cwd.join(".vscode").join("mcp.json"),
            ],
            Host::Zed => {
                let user = match places.os {
                    Os::Windows => config.join("Zed"),
                    // Zed keeps ~/.config/zed on macOS too.
                    Os::Mac => home.join(".config").join("zed"),
                    Os::Linux => config.join("zed"),
                };
                vec![
                    user.join("settings.json"),
                    places.cwd.join(".zed").join("settings.json"),
                ]
            }
            Host::Codex => vec![
                places
                    .codex_home
                    .clone()
                    .unwrap_or_else(|| home.join(".codex"))
                    .join("config.toml"),
            ],
            Host::Windsurf => vec![
                home.join(".codeium")
                    .join("windsurf")
                    .join("mcp_config.json"),
            ],
            Host::Gemini => vec![
                home.join(".gemini").join("settings.json"),
                places.cwd.join(".gemini").join("settings.json"),
            ],
        };
        // Run from the home directory, a project file is the user file.
        let mut seen = Vec::new();
        files.retain(|file| {
            let new = !seen.contains(file);
            seen.push(file.clone());
            new
        });
        files
    }
}

/// An operating system, for its config directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Os {
    /// Linux and the other Unixes that follow the XDG layout.
    Linux,
    /// macOS.
    Mac,
    /// Windows.
    Windows,
}

/// The directories host paths are made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Places {
    /// Which layout applies.
    pub(crate) os: Os,
    /// The home directory (`HOME`; `USERPROFILE` on Windows).
    pub(crate) home: PathBuf,
    /// `XDG_CONFIG_HOME` (Linux, when set to an absolute path).
    pub(crate) xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows).
    pub(crate) appdata: Option<PathBuf>,
    /// `CODEX_HOME`, when set.
    pub(crate) codex_home: Option<PathBuf>,
    /// The current directory, for per-project files.
    pub(crate) cwd: PathBuf,
}

impl Places {
    /// This process's places, from its environment.
    pub(crate) fn from_env() -> Result<Places, String> {
        let os = if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::Mac
        } else {
            Os::Linux
        };
        let absolute = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let home = match os {
            Os::Windows => absolute("USERPROFILE"),
            _ => absolute("HOME"),
        }
        .or_else(std::env::home_dir)
        .ok_or("cannot tell the home directory (HOME is not set)")?;
        let cwd = std::env::current_dir()
            .map_err(|error| format!("cannot tell the current directory: {error}"))?;
        Ok(Places {
            os,
            home,
            xdg_config_home: absolute("XDG_CONFIG_HOME"),
            appdata: absolute("APPDATA"),
            codex_home: absolute("CODEX_HOME"),
            cwd,
        })
    }

    /// Where applications keep their settings: `~/Library/Application
    /// Support` on macOS, `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` or
    /// `~/.config` elsewhere.
    fn config_dir(&self) -> PathBuf {
        match self.os {
            Os::Mac => self.home.join("Library").join("Application Support"),
            Os::Windows => self
                .appdata
                .clone()
                .unwrap_or_else(|| self.home.join("AppData").join("Roaming")),
            Os::Linux => self
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| self.home.join(".config")),
        }
    }

    /// `path` with the home directory written `~`, for reports.
    pub(crate) fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) if self.os != Os::Windows => format!("~/{}", rest.display()),
            _ => path.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(os: Os) -> Places {
        Places {
            os,
            home: PathBuf::from("/home/me"),
            xdg_config_home: None,
            appdata: None,
            codex_home: None,
            cwd: PathBuf::from("/work/app"),
        }
    }

    fn files(host: Host, places: &Places) -> Vec<String> {
        host.files(places)
            .iter()
            .map(|path| path.to_string_lossy().replace('\\', "/"))
            .collect()
    }

    #[test]
    fn claude_desktop_lives_where_each_os_keeps_application_settings() {
        assert_eq!(
            files(Host::ClaudeDesktop, &places(Os::Linux)),
            ["/home/me/.config/Claude/claude_desktop_config.json"]
        );
        assert_eq!(
            files(Host::ClaudeDesktop, &places(Os::Mac)),
            ["/home/me/Library/Application Support/Claude/claude_desktop_config.json"]
        );
        let windows = Places {
            home: PathBuf::from(r"C:\Users\me"),
            appdata: Some(PathBuf::from(r"C:\Users\me\AppData\Roaming")),
            ..places(Os::Windows)
        };
        assert_eq!(
            files(Host::ClaudeDesktop, &windows),
            ["C:/Users/me/AppData/Roaming/Claude/claude_desktop_config.json"]
        );
        let xdg = Places {
            xdg_config_home: Some(PathBuf::from("/home/me/cfg")),
            ..places(Os::Linux)
        };
        assert_eq!(
            files(Host::ClaudeDesktop, &xdg),
            ["/home/me/cfg/Claude/claude_desktop_config.json"]
        );
    }

    #[test]
    fn every_host_has_its_user_and_project_files() {
        let linux = places(Os::Linux);
        assert_eq!(
            files(Host::ClaudeCode, &linux),
            ["/home/me/.claude.json", "/work/app/.mcp.json"]
        );
        assert_eq!(
            files(Host::Cursor, &linux),
            ["/home/me/.cursor/mcp.json", "/work/app/.cursor/mcp.json"]
        );
        assert_eq!(
            files(Host::VsCode, &linux),
            [
                "/home/me/.config/Code/User/mcp.json",
                "/home/me/.config/Code - Insiders/User/mcp.json",
                "/work/app/.vscode/mcp.json"
            ]
        );
        assert_eq!(
            files(Host::VsCode, &places(Os::Mac))[0],
            "/home/me/Library/Application Support/Code/User/mcp.json"
        );
        assert_eq!(
            files(Host::Zed, &linux),
            [
                "/home/me/.config/zed/settings.json",
                "/work/app/.zed/settings.json"
            ]
        );
        assert_eq!(
            files(Host::Zed, &places(Os::Mac))[0],
            "/home/me/.config/zed/settings.json"
        );
        assert_eq!(
            files(Host::Zed, &places(Os::Windows))[0],
            "/home/me/AppData/Roaming/Zed/settings.json"
        );
        assert_eq!(files(Host::Codex, &linux), ["/home/me/.codex/config.toml"]);
        let codex_home = Places {
            codex_home: Some(PathBuf::from("/srv/codex")),
            ..places(Os::Linux)
        };
        assert_eq!(files(Host::Codex, &codex_home), ["/srv/codex/config.toml"]);
        assert_eq!(
            files(Host::Windsurf, &linux),
            ["/home/me/.codeium/windsurf/mcp_config.json"]
        );
        assert_eq!(
            files(Host::Gemini, &linux),
            [
                "/home/me/.gemini/settings.json",
                "/work/app/.gemini/settings.json"
            ]
        );
    }

    #[test]
    fn run_from_home_a_project_file_is_listed_once() {
        let at_home = Places {
            cwd: PathBuf::from("/home/me"),
            ..places(Os::Linux)
        };
        assert_eq!(files(Host::Cursor, &at_home), ["/home/me/.cursor/mcp.json"]);
    }

    #[test]
    fn reports_write_the_home_directory_as_a_tilde() {
        let linux = places(Os::Linux);
        assert_eq!(
            linux.show(Path::new("/home/me/.codex/config.toml")),
            "~/.codex/config.toml"
        );
        assert_eq!(linux.show(Path::new("/etc/x.json")), "/etc/x.json");
    }
}
