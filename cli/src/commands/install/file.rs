//! One config file: its format, the plan for it (new text, backup), the
//! diff, and the write.
//!
//! The backup. `install` saves the file's bytes as `<file>.drainpipe-backup`
//! before its first change. `uninstall` puts those bytes back when
//! installing onto the backup, with the same drainpipe command and proxy
//! arguments as the current file's wrapped servers, gives exactly the
//! current file: then nothing else changed since, and the restore is byte
//! for byte. Otherwise (the file was edited since, or there is no backup) it
//! unwraps each server in place, which also keeps the file's formatting and
//! undoes `install`'s edits exactly, but cannot tell a server wrapped by
//! `install` from one wrapped by hand, nor `"args": []` from no `args`.
//!
//! When `install` finds a backup that no longer matches: if the file holds
//! no wrapped server the old backup is replaced (it is a new first install);
//! otherwise it is kept and `uninstall` will unwrap in place.
//!
//! Writes go to a temporary file in the same directory, synced, given the
//! old file's permissions (and owner, on Unix), then renamed over the file:
//! a host never reads half a file. A symlinked config is written through the
//! link. If the file changed while we worked (a host rewriting its
//! settings), nothing is written.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::jsonc::{self, Dialect};
use super::toml;
use super::wrap::{Edit, EditError, ParseError, ServerReport, Wrapper};

/// A config file layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// JSON with a top-level `mcpServers` map (Claude Desktop, Claude Code,
    /// Cursor, Windsurf, Gemini CLI); `projects.<path>.mcpServers` too.
    McpServers,
    /// VS Code's `mcp.json`: JSON with comments, a top-level `servers` map.
    #[value(name = "vscode")]
    VsCode,
    /// Zed's `settings.json`: JSON with comments, `context_servers`.
    Zed,
    /// Codex's `config.toml`: `[mcp_servers.NAME]` tables.
    Codex,
}

impl Format {
    /// Wraps every stdio server in `text`.
    pub(crate) fn wrap(self, text: &str, wrapper: &Wrapper) -> Result<Edit, EditError> {
        match self.dialect() {
            Some(dialect) => jsonc::wrap(text, dialect, wrapper),
            None => toml::wrap(text, wrapper),
        }
    }

    /// Unwraps every wrapped server in `text`.
    pub(crate) fn unwrap(self, text: &str, wrapper: &Wrapper) -> Result<Edit, EditError> {
        match self.dialect() {
            Some(dialect) => jsonc::unwrap(text, dialect, wrapper),
            None => toml::unwrap(text, wrapper),
        }
    }

    fn dialect(self) -> Option<Dialect> {
        match self {
            Format::McpServers => Some(Dialect::McpServers),
            Format::VsCode => Some(Dialect::VsCode),
            Format::Zed => Some(Dialect::Zed),
            Format::Codex => None,
        }
    }

    /// The format's name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::McpServers => "mcp-servers",
            Format::VsCode => "vscode",
            Format::Zed => "zed",
            Format::Codex => "codex",
        }
    }

    /// Tells the format of a file: by its name and directory first
    /// (`config.toml` or any `.toml`, `claude_desktop_config.json`,
    /// `.claude.json`, `.mcp.json`, `mcp_config.json`, `mcp.json` under
    /// `.vscode` or a VS Code `User` directory or `.cursor`, `settings.json`
    /// under `zed`, `.zed` or `.gemini`), then by which server map the
    /// file holds. A file holding none, or more than one kind, needs
    /// `--format`.
    pub(crate) fn detect(path: &Path, text: &str) -> Result<Format, DetectError> {
        if let Some(format) = Format::by_name(path) {
            return Ok(format);
        }
        let json = jsonc::dialects_present(text);
        match json {
            Ok(found) => match found.as_slice() {
                [one] => Ok(Format::from(*one)),
                [] => Err(DetectError::Unknown),
                several => Err(DetectError::Ambiguous(
                    several.iter().map(|d| Format::from(*d).name()).collect(),
                )),
            },
            Err(json_error) => match toml::has_servers(text) {
                Ok(true) => Ok(Format::Codex),
                _ => Err(DetectError::Parse(json_error)),
            },
        }
    }

    fn by_name(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let parent = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|name| name.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if name.ends_with(".toml") {
            return Some(Format::Codex);
        }
        match name.as_str() {
            "claude_desktop_config.json" | ".claude.json" | ".mcp.json" | "mcp_config.json" => {
                Some(Format::McpServers)
            }
            "mcp.json" if parent == ".vscode" || parent == "user" => Some(Format::VsCode),
            "mcp.json" if parent == ".cursor" => Some(Format::McpServers),
            "settings.json" if parent == "zed" || parent == ".zed" => Some(Format::Zed),
            "settings.json" if parent == ".gemini" => Some(Format::McpServers),
            _ => None,
        }
    }
}

impl From<Dialect> for Format {
    fn from(dialect: Dialect) -> Self {
        match dialect {
            Dialect::McpServers => Format::McpServers,
            Dialect::VsCode => Format::VsCode,
            Dialect::Zed => Format::Zed,
        }
    }
}

/// Why a file's format could not be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DetectError {
    /// Neither its name nor its contents say.
    Unknown,
    /// It holds the server maps of several formats.
    Ambiguous(Vec<&'static str>),
    /// It does not parse as JSON (nor as a TOML file with `mcp_servers`).
    Parse(ParseError),
}

impl std::fmt::Display for DetectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DetectError::Unknown => write!(
                f,
                "cannot tell its format: no mcpServers, servers, context_servers or \
                 [mcp_servers] in it (say --format)"
            ),
            DetectError::Ambiguous(names) => write!(
                f,
                "cannot tell its format: it holds the servers of {} (say --format)",
                names.join(" and ")
            ),
            DetectError::Parse(error) => write!(f, "cannot parse it: {error}"),
        }
    }
}

/// The suffix of the backup file.
pub(crate) const BACKUP_SUFFIX: &str = ".drainpipe-backup";

/// Where a file's backup goes.
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(BACKUP_SUFFIX);
    path.with_file_name(name)
}

/// What happens to the backup file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Backup {
    /// Nothing: none is needed or the present one stays as it is.
    Untouched,
    /// Saved (or replaced) with the file's current bytes.
    Save,
    /// A backup that no longer matches is kept as it is: `uninstall` will
    /// unwrap in place.
    KeepStale,
    /// `uninstall` restored from it; it is removed.
    Remove,
    /// `uninstall` could not use it (the file changed since): it stays.
    LeftStale,
}

/// How `uninstall` undid `install`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Undo {
    /// The backup's bytes were put back.
    Restored,
    /// Each wrapped server was unwrapped in place.
    Unwrapped,
}

/// What will be done to one file.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The file as it will be written (a symlink resolved).
    pub(crate) path: PathBuf,
    /// Its current text.
    pub(crate) before: String,
    /// Its new text (equal to `before` when nothing changes).
    pub(crate) after: String,
    /// The servers found and what becomes of them.
    pub(crate) servers: Vec<ServerReport>,
    /// What happens to the backup.
    pub(crate) backup: Backup,
    /// For `uninstall`: how.
    pub(crate) undo: Option<Undo>,
}

impl Plan {
    /// Whether the file changes.
    pub(crate) fn changes(&self) -> bool {
        self.before != self.after
    }

    /// A unified diff of the change, with the file's path in the header.
    pub(crate) fn diff(&self, shown: &str) -> String {
        similar::TextDiff::from_lines(&self.before, &self.after)
            .unified_diff()
            .context_radius(3)
            .header(shown, shown)
            .to_string()
    }
}

/// Why a file could not be planned or written.
#[derive(Debug)]
pub(crate) enum FileError {
    /// Reading or writing failed.
    Io(String),
    /// The file is not something we can edit (parse error, unknown format).
    Content(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Io(message) | FileError::Content(message) => f.write_str(message),
        }
    }
}

/// Reads a config file (through a symlink) as UTF-8 text.
pub(crate) fn read(path: &Path) -> Result<(PathBuf, String), FileError> {
    let real = fs::canonicalize(path)
        .map(without_verbatim_prefix)
        .map_err(|error| FileError::Io(format!("cannot read it: {error}")))?;
    let bytes =
        fs::read(&real).map_err(|error| FileError::Io(format!("cannot read it: {error}")))?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&error.into_bytes()[..at]).into_owned();
        let where_ = ParseError::at(&text, at, "not UTF-8 text");
        FileError::Content(format!("cannot parse it: {where_}"))
    })?;
    Ok((real, text))
}

/// `C:\…` for the `\\?\C:\…` that `canonicalize` returns on Windows: the
/// same file, in the form the user wrote and reads in the report.
fn without_verbatim_prefix(path: PathBuf) -> PathBuf {
    match path.to_str().and_then(|p| p.strip_prefix(r"\\?\")) {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path,
    }
}

/// Plans `install` for one file's text.
pub(crate) fn plan_install(
    path: PathBuf,
    text: String,
    format: Format,
    wrapper: &Wrapper,
) -> Result<Plan, FileError> {
    let edit = format
        .wrap(&text, wrapper)
        .map_err(|error| FileError::Content(error.to_string()))?;
    let mut backup = Backup::Untouched;
    if edit.text != text {
        backup = match fs::read(backup_path(&path)) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Backup::Save,
            Err(error) => {
                return Err(FileError::Io(format!(
                    "cannot read its backup {}: {error}",
                    backup_path(&path).display()
                )));
            }
            // Something is wrapped already (by an earlier install or by
            // hand): the old backup is the better record of the original.
            Ok(_) if holds_wrapped(format, &text, wrapper) => Backup::KeepStale,
            Ok(_) => Backup::Save,
        };
    }
    Ok(Plan {
        path,
        before: text.clone(),
        after: edit.text,
        servers: edit.servers,
        backup,
        undo: None,
    })
}

/// Plans `uninstall` for one file's text.
pub(crate) fn plan_uninstall(
    path: PathBuf,
    text: String,
    format: Format,
    wrapper: &Wrapper,
) -> Result<Plan, FileError> {
    let edit = format
        .unwrap(&text, wrapper)
        .map_err(|error| FileError::Content(error.to_string()))?;
    let saved = match fs::read(backup_path(&path)) {
        Ok(bytes) => String::from_utf8(bytes).ok(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(FileError::Io(format!(
                "cannot read its backup {}: {error}",
                backup_path(&path).display()
            )));
        }
    };
    let mut plan = Plan {
        path,
        before: text.clone(),
        after: edit.text.clone(),
        servers: edit.servers,
        backup: Backup::Untouched,
        undo: None,
    };
    if !plan.changes() {
        return Ok(plan);
    }
    plan.undo = Some(Undo::Unwrapped);
    if let Some(saved) = saved {
        let restorable = plan
            .servers
            .iter()
            .filter_map(|server| server.wrapper.as_ref())
            .any(|used| {
                format
                    .wrap(&saved, used)
                    .is_ok_and(|again| again.text == text)
            });
        if restorable {
            plan.after = saved;
            plan.undo = Some(Undo::Restored);
            plan.backup = Backup::Remove;
        } else {
            plan.backup = Backup::LeftStale;
        }
    }
    Ok(plan)
}

/// Whether any server in `text` is behind drainpipe.
fn holds_wrapped(format: Format, text: &str, wrapper: &Wrapper) -> bool {
    format
        .unwrap(text, wrapper)
        .is_ok_and(|edit| edit.changed())
}

/// Writes a plan: the backup first, then the file; then removes a used
/// backup. Nothing is written when the plan changes nothing.
pub(crate) fn commit(plan: &Plan) -> Result<(), FileError> {
    if !plan.changes() {
        return Ok(());
    }
    let io = |what: &str, error: io::Error| FileError::Io(format!("cannot {what}: {error}"));
    let now = fs::read(&plan.path).map_err(|error| io("read it again", error))?;
    if now != plan.before.as_bytes() {
        return Err(FileError::Io(
            "it changed while drainpipe was editing it (is the host running and rewriting \
             it?); nothing written, run the command again"
                .to_string(),
        ));
    }
    let metadata = fs::metadata(&plan.path).map_err(|error| io("read its permissions", error))?;
    let backup = backup_path(&plan.path);
    if plan.backup == Backup::Save {
        write_atomically(&backup, plan.before.as_bytes(), &metadata)
            .map_err(|error| io(&format!("write the backup {}", backup.display()), error))?;
    }
    write_atomically(&plan.path, plan.after.as_bytes(), &metadata)
        .map_err(|error| io("write it", error))?;
    if plan.backup == Backup::Remove {
        fs::remove_file(&backup)
            .map_err(|error| io(&format!("remove the backup {}", backup.display()), error))?;
    }
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path` with `like`'s
/// permissions (and owner, on Unix), then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8], like: &fs::Metadata) -> io::Result<()> {
    let directory = path
        .parent()
        .ok_or_else(|| io::Error::other("the file has no directory"))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = directory.join(format!(".{name}.drainpipe-{}.tmp", std::process::id()));
    let result = (|| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        // Created with the file's own mode from the start: a config holding
        // API keys (0600) must not sit readable by others, even briefly.
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(like.permissions().mode() & 0o7777);
        }
        let mut file = options.open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::set_permissions(&temporary, like.permissions())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let made = fs::metadata(&temporary)?;
            if (made.uid(), made.gid()) != (like.uid(), like.gid()) {
                std::os::unix::fs::chown(&temporary, Some(like.uid()), Some(like.gid()))?;
            }
        }
        fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper(command: &str) -> Wrapper {
        Wrapper {
            command: command.to_string(),
            launcher: Vec::new(),
            proxy_args: Vec::new(),
            remote: false,
        }
    }

    /// A fresh directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "drainpipe-install-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const ORIGINAL: &str = "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"npx\", \"args\": [] },\n    \"b\": {\n      \"command\": \"uvx\"\n    }\n  }\n}\n";

    fn install(path: &Path, wrapper: &Wrapper) -> Plan {
        let (real, text) = read(path).unwrap();
        let plan = plan_install(real, text, Format::McpServers, wrapper).unwrap();
        commit(&plan).unwrap();
        plan
    }

    fn uninstall(path: &Path, wrapper: &Wrapper) -> Plan {
        let (real, text) = read(path).unwrap();
        let plan = plan_uninstall(real, text, Format::McpServers, wrapper).unwrap();
        commit(&plan).unwrap();
        plan
    }

    #[test]
    fn a_verbatim_drive_path_is_reported_as_written() {
        let plain = |p: &str| without_verbatim_prefix(PathBuf::from(p));
        assert_eq!(
            plain(r"\\?\C:\Users\me\a.json"),
            PathBuf::from(r"C:\Users\me\a.json")
        );
        // A UNC share needs its prefix; unix paths have none.
        assert_eq!(
            plain(r"\\?\UNC\host\a.json"),
            PathBuf::from(r"\\?\UNC\host\a.json")
        );
        assert_eq!(plain("/home/me/a.json"), PathBuf::from("/home/me/a.json"));
    }
    #[test]
    fn uninstall_restores_the_backup_byte_for_byte() {
        let scratch = Scratch::new("restore");
        let path = scratch.0.join("claude_desktop_config.json");
        fs::write(&path, ORIGINAL).unwrap();
        let used = Wrapper {
            command: "/opt/bin/drainpipe".into(),
            launcher: Vec::new(),
            proxy_args: vec!["--clip".into(), "64KiB".into()],
            remote: false,
        };
        let first = install(&path, &used);
        assert_eq!(first.backup, Backup::Save);
        assert_eq!(fs::read_to_string(backup_path(&path)).unwrap(), ORIGINAL);
        let second = install(&path, &used);
        assert!(!second.changes());
        assert_eq!(second.backup, Backup::Untouched);
        // `[]` cannot come back by unwrapping; the backup brings it back.
        // Uninstall recognises the servers by the binary's name and learns
        // the command and proxy arguments install used from them.
        let undo = uninstall(&path, &wrapper("/usr/local/bin/drainpipe"));
        assert_eq!(undo.undo, Some(Undo::Restored));
        assert_eq!(fs::read_to_string(&path).unwrap(), ORIGINAL);
        assert!(!backup_path(&path).exists());
        let again = uninstall(&path, &wrapper("/usr/local/bin/drainpipe"));
        assert!(!again.changes());
    }

    #[test]
    fn uninstall_restores_remote_servers_byte_for_byte() {
        let scratch = Scratch::new("remote");
        let path = scratch.0.join(".mcp.json");
        let original = "{\n  \"mcpServers\": {\n    \"docs\": {\n      \"type\": \"http\",\n      \"url\": \"https://docs.example/mcp\",\n      \"headers\": { \"Authorization\": \"Bearer ${TOKEN}\" }\n    },\n    \"sse\": { \"type\": \"sse\", \"url\": \"https://s.example/sse\" },\n    \"local\": { \"command\": \"npx\", \"args\": [] }\n  }\n}\n";
        fs::write(&path, original).unwrap();
        let used = Wrapper {
            remote: true,
            ..wrapper("/opt/bin/drainpipe")
        };
        let first = install(&path, &used);
        assert_eq!(first.backup, Backup::Save);
        let wrapped = fs::read_to_string(&path).unwrap();
        assert!(!wrapped.contains("\"url\""), "{wrapped}");
        // The type, the header map and `[]` cannot come back by unwrapping
        // in place; the backup brings them back.
        let undo = uninstall(&path, &wrapper("drainpipe"));
        assert_eq!(undo.undo, Some(Undo::Restored));
        assert_eq!(fs::read_to_string(&path).unwrap(), original);
        assert!(!backup_path(&path).exists());
        // A file with remote servers only is restored just the same.
        let remote_only = "{ \"mcpServers\": { \"r\": { \"url\": \"https://r.example\" } } }";
        fs::write(&path, remote_only).unwrap();
        install(&path, &used);
        assert_eq!(
            uninstall(&path, &wrapper("drainpipe")).undo,
            Some(Undo::Restored)
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), remote_only);
    }

    #[test]
    fn a_file_edited_since_install_is_unwrapped_in_place() {
        let scratch = Scratch::new("edited");
        let path = scratch.0.join(".mcp.json");
        fs::write(&path, ORIGINAL).unwrap();
        let used = wrapper("/opt/dp");
        install(&path, &used);
        let edited = fs::read_to_string(&path).unwrap().replace(
            "\"mcpServers\": {",
            "\"mcpServers\": {\n    \"c\": { \"command\": \"node\" },",
        );
        fs::write(&path, &edited).unwrap();
        // A second install wraps the new server and keeps the first backup.
        let plan = install(&path, &used);
        assert_eq!(plan.backup, Backup::KeepStale);
        assert_eq!(fs::read_to_string(backup_path(&path)).unwrap(), ORIGINAL);
        let undo = uninstall(&path, &used);
        assert_eq!(undo.undo, Some(Undo::Unwrapped));
        assert_eq!(undo.backup, Backup::LeftStale);
        let now = fs::read_to_string(&path).unwrap();
        assert!(!now.contains("proxy"), "{now}");
        assert!(now.contains("\"c\": { \"command\": \"node\" },"), "{now}");
        assert!(
            now.contains("\"b\": {\n      \"command\": \"uvx\"\n    }"),
            "{now}"
        );
        assert!(backup_path(&path).exists());
        // The next install starts over: the stale backup is replaced.
        let plan = install(&path, &used);
        assert_eq!(plan.backup, Backup::Save);
        assert_eq!(fs::read_to_string(backup_path(&path)).unwrap(), now);
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_kept_and_symlinks_are_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = Scratch::new("perms");
        let real = scratch.0.join("real.json");
        fs::write(&real, ORIGINAL).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = scratch.0.join(".mcp.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        install(&link, &wrapper("/opt/dp"));
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(fs::read_to_string(&real).unwrap().contains("/opt/dp"));
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(backup_path(&real))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        let leftovers: Vec<_> = fs::read_dir(&scratch.0)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_file_changed_underneath_is_not_overwritten() {
        let scratch = Scratch::new("race");
        let path = scratch.0.join(".mcp.json");
        fs::write(&path, ORIGINAL).unwrap();
        let (real, text) = read(&path).unwrap();
        let plan = plan_install(real, text, Format::McpServers, &wrapper("/opt/dp")).unwrap();
        fs::write(&path, "{}\n").unwrap();
        let Err(FileError::Io(message)) = commit(&plan) else {
            panic!("wrote over a changed file");
        };
        assert!(message.contains("changed while"), "{message}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}\n");
        assert!(!backup_path(&path).exists());
    }

    #[test]
    fn formats_are_told_by_name_then_by_contents() {
        let cases = [
            ("/x/claude_desktop_config.json", "{}", Format::McpServers),
            ("/home/me/.claude.json", "{}", Format::McpServers),
            ("/p/.cursor/mcp.json", "{}", Format::McpServers),
            ("/p/.vscode/mcp.json", "{}", Format::VsCode),
            ("/c/Code/User/mcp.json", "{}", Format::VsCode),
            ("/c/zed/settings.json", "{}", Format::Zed),
            ("/p/.gemini/settings.json", "{}", Format::McpServers),
            ("/c/.codex/config.toml", "", Format::Codex),
            ("/x/any.json", "{\"servers\": {}}", Format::VsCode),
            (
                "/x/any.jsonc",
                "// z\n{\"context_servers\": {},}",
                Format::Zed,
            ),
            (
                "/x/any",
                "[mcp_servers.a]\ncommand = \"x\"\n",
                Format::Codex,
            ),
        ];
        for (path, text, format) in cases {
            assert_eq!(Format::detect(Path::new(path), text), Ok(format), "{path}");
        }
        assert_eq!(
            Format::detect(Path::new("/x/any.json"), "{\"theme\": 1}"),
            Err(DetectError::Unknown)
        );
        assert_eq!(
            Format::detect(
                Path::new("/x/any.json"),
                "{\"servers\": {}, \"mcpServers\": {}}"
            ),
            Err(DetectError::Ambiguous(vec!["mcp-servers", "vscode"]))
        );
        let Err(DetectError::Parse(error)) =
            Format::detect(Path::new("/x/any.json"), "{\n  \"a\": tru\n}")
        else {
            panic!("bad JSON detected");
        };
        assert_eq!(error.line, 2, "{error}");
    }

    #[test]
    fn the_diff_is_unified_with_the_path_in_its_header() {
        let plan = plan_install(
            PathBuf::from("/nonexistent/.mcp.json"),
            ORIGINAL.to_string(),
            Format::McpServers,
            &wrapper("/opt/dp"),
        )
        .unwrap();
        let diff = plan.diff("~/.mcp.json");
        assert!(
            diff.starts_with("--- ~/.mcp.json\n+++ ~/.mcp.json\n@@ "),
            "{diff}"
        );
        assert!(diff.contains("\n-      \"command\": \"uvx\"\n+      \"command\": \"/opt/dp\",\n+      \"args\": [\"proxy\", \"--\", \"uvx\"]\n"), "{diff}");
    }
}
