//! Editing Codex's `config.toml` in place with `toml_edit`.
//!
//! Servers are the tables under `mcp_servers` (`[mcp_servers.NAME]`, or
//! inline tables, or dotted keys): `command`, `args`, `env`, `cwd`, … for a
//! stdio server, `url` for a remote one. `toml_edit` keeps every comment,
//! blank line and key order that it is not asked to change; on top of that:
//!
//! - the new `command` keeps the old one's surroundings (a comment after it
//!   stays on its line);
//! - the original command goes into `args` as it was spelled (`'npx'` stays a
//!   literal string);
//! - inserted words copy the layout of the array: one per line at the first
//!   element's indentation for a multi-line array, `, ` apart for a one-line
//!   one;
//! - a new `args` key goes right after `command`, at its indentation.
//!
//! Unwrapping undoes exactly that, so a wrapped file unwraps to the same
//! bytes.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Key, Table, Value};

use super::remote::{Remote, remote_of};
use super::wrap::{
    Action, Edit, EditError, ParseError, ServerReport, Wrapper, original_command_index,
    show_command, wrapper_of,
};

/// `install`: wraps every stdio server under `mcp_servers`.
pub(crate) fn wrap(text: &str, wrapper: &Wrapper) -> Result<Edit, EditError> {
    edit(text, wrapper, Mode::Wrap)
}

/// `uninstall`: takes drainpipe away from every wrapped server.
pub(crate) fn unwrap(text: &str, wrapper: &Wrapper) -> Result<Edit, EditError> {
    edit(text, wrapper, Mode::Unwrap)
}

/// Whether the file has an `mcp_servers` table (for telling formats apart).
pub(crate) fn has_servers(text: &str) -> Result<bool, ParseError> {
    Ok(parse(text)?.get("mcp_servers").is_some())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Wrap,
    Unwrap,
}

fn parse(text: &str) -> Result<DocumentMut, ParseError> {
    text.parse::<DocumentMut>().map_err(|error| {
        let at = error.span().map_or(0, |span| span.start);
        ParseError::at(text, at, error.message().trim())
    })
}

fn edit(text: &str, wrapper: &Wrapper, mode: Mode) -> Result<Edit, EditError> {
    let mut document = parse(text).map_err(EditError::Parse)?;
    let mut servers = Vec::new();
    let mut expected = Vec::new();
    if let Some(map) = document
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
    {
        for (name, item) in map.iter_mut() {
            let name = name.get().to_string();
            let (action, detail, intended, used) = match item {
                Item::Table(table) => edit_entry(&mut Entry::Table(table), wrapper, mode),
                Item::Value(Value::InlineTable(table)) => {
                    edit_entry(&mut Entry::Inline(table), wrapper, mode)
                }
                _ => (
                    Action::Skipped("not a table".into()),
                    String::new(),
                    None,
                    None,
                ),
            };
            if let Some(intended) = intended {
                expected.push((name.clone(), intended));
            }
            servers.push(ServerReport {
                scope: None,
                name,
                action,
                detail,
                wrapper: used,
            });
        }
    }
    if expected.is_empty() {
        return Ok(Edit {
            text: text.to_string(),
            servers,
        });
    }
    let new_text = document.to_string();
    check(&new_text, &expected)?;
    Ok(Edit {
        text: new_text,
        servers,
    })
}

/// The edited text parses, and each changed server reads as intended.
fn check(text: &str, expected: &[(String, Intended)]) -> Result<(), EditError> {
    let document = parse(text)
        .map_err(|error| EditError::Check(format!("the edited file does not parse: {error}")))?;
    for (name, intended) in expected {
        let item = document.get("mcp_servers").and_then(|map| map.get(name));
        if let Intended::Remote(url) = intended {
            let table = item.and_then(Item::as_table_like);
            let read_url = table
                .and_then(|table| table.get("url"))
                .and_then(Item::as_str);
            if read_url == Some(url.as_str()) && table.is_some_and(|t| t.get("command").is_none()) {
                continue;
            }
            return Err(EditError::Check(format!(
                "server {name} does not read as intended after the edit"
            )));
        }
        let entry = item.map(|item| match item {
            Item::Table(table) => read_table(table.get("command"), table.get("args")),
            Item::Value(Value::InlineTable(table)) => read_table(
                table
                    .get("command")
                    .map(|value| Item::Value(value.clone()))
                    .as_ref(),
                table
                    .get("args")
                    .map(|value| Item::Value(value.clone()))
                    .as_ref(),
            ),
            _ => Err((Action::Skipped("not a table".into()), String::new())),
        });
        match entry {
            Some(Ok(actual)) if matches!(intended, Intended::Stdio(stdio) if *stdio == actual) => {}
            _ => {
                return Err(EditError::Check(format!(
                    "server {name} does not read as intended after the edit"
                )));
            }
        }
    }
    Ok(())
}

/// A server's table, standard or inline.
enum Entry<'a> {
    Table(&'a mut Table),
    Inline(&'a mut InlineTable),
}

/// A stdio server's command and arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stdio {
    command: String,
    args: Vec<String>,
}

/// What a changed server must read as after the edit.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Intended {
    /// A stdio server (wrapped, or unwrapped from a stdio server).
    Stdio(Stdio),
    /// A remote server at this URL (unwrapped from `proxy --url`).
    Remote(String),
}

fn read(entry: &Entry<'_>) -> Result<Stdio, (Action, String)> {
    match entry {
        Entry::Table(table) => {
            if let Some(url) = table.get("url") {
                return Err((Action::Remote, url.as_str().unwrap_or("url").to_string()));
            }
            read_table(table.get("command"), table.get("args"))
        }
        Entry::Inline(table) => {
            if let Some(url) = table.get("url") {
                return Err((Action::Remote, url.as_str().unwrap_or("url").to_string()));
            }
            read_table(
                table
                    .get("command")
                    .map(|value| Item::Value(value.clone()))
                    .as_ref(),
                table
                    .get("args")
                    .map(|value| Item::Value(value.clone()))
                    .as_ref(),
            )
        }
    }
}

fn read_table(command: Option<&Item>, args: Option<&Item>) -> Result<Stdio, (Action, String)> {
    let command = match command {
        None => return Err((Action::Skipped("no command".into()), String::new())),
        Some(item) => match item.as_str() {
            Some(command) => command.to_string(),
            None => {
                return Err((
                    Action::Skipped("command is not a string".into()),
                    String::new(),
                ));
            }
        },
    };
    let args = match args {
        None => Vec::new(),
        Some(item) => {
            let Some(array) = item.as_array() else {
                return Err((Action::Skipped("args is not a list".into()), command));
            };
            let mut args = Vec::with_capacity(array.len());
            for word in array.iter() {
                match word.as_str() {
                    Some(word) => args.push(word.to_string()),
                    None => {
                        return Err((
                            Action::Skipped("args holds something other than strings".into()),
                            command,
                        ));
                    }
                }
            }
            args
        }
    };
    Ok(Stdio { command, args })
}

/// What became of one server: the action, the command line for the report,
/// what the server must read as afterwards when it changed, and the wrapper
/// an unwrapped server had.
type Outcome = (Action, String, Option<Intended>, Option<Wrapper>);

/// Edits one server.
fn edit_entry(entry: &mut Entry<'_>, wrapper: &Wrapper, mode: Mode) -> Outcome {
    let found = match read(entry) {
        Ok(found) => found,
        Err((Action::Remote, url)) if mode == Mode::Wrap && wrapper.remote => {
            return wrap_remote(entry, wrapper, url);
        }
        Err((action, detail)) => return (action, detail, None, None),
    };
    let shown = show_command(&found.command, &found.args);
    let wrapped = wrapper.is_wrapped(&found.command, &found.args);
    if mode == Mode::Unwrap
        && wrapped
        && let Some(found) = remote_of(&found.command, &found.args)
    {
        return match found {
            Ok((used, remote)) => {
                unwrap_remote(entry, &remote);
                let url = remote.url.clone();
                (
                    Action::Unwrapped,
                    remote.url,
                    Some(Intended::Remote(url)),
                    Some(used),
                )
            }
            Err(reason) => (
                Action::Skipped(format!("cannot unwrap: {reason}")),
                shown,
                None,
                None,
            ),
        };
    }
    match mode {
        Mode::Wrap if wrapped => (Action::AlreadyWrapped, shown, None, None),
        Mode::Wrap => {
            let original = command_value(entry).clone();
            set_command(entry, Value::from(wrapper.command.as_str()));
            let mut words: Vec<Value> = wrapper.prefix().into_iter().map(Value::from).collect();
            words.push(original);
            match args_array(entry) {
                Some(array) => insert_front(array, words),
                None => insert_args(entry, Array::from_iter(words)),
            }
            let mut args = wrapper.prefix();
            args.push(found.command.clone());
            args.extend(found.args.iter().cloned());
            let intended = Stdio {
                command: wrapper.command.clone(),
                args,
            };
            (
                Action::Wrapped,
                shown,
                Some(Intended::Stdio(intended)),
                None,
            )
        }
        Mode::Unwrap if !wrapped => (Action::NotWrapped, shown, None, None),
        Mode::Unwrap => {
            let at = match original_command_index(&found.command, &found.args) {
                Ok(at) => at,
                Err(reason) => {
                    return (
                        Action::Skipped(format!("cannot unwrap: {reason}")),
                        shown,
                        None,
                        None,
                    );
                }
            };
            let array = args_array(entry).expect("a wrapped entry has arguments");
            let original = array.get(at).expect("checked above").clone();
            let first_prefix = array.get(0).and_then(|word| word.decor().prefix()).cloned();
            for _ in 0..=at {
                array.remove(0);
            }
            let now_empty = array.is_empty();
            if let (Some(prefix), Some(first)) = (first_prefix, array.get_mut(0)) {
                first.decor_mut().set_prefix(prefix);
            }
            set_command(entry, original);
            if now_empty {
                // As in the JSON formats: `install` adds `args` to an entry
                // that had none, so an empty one goes.
                match entry {
                    Entry::Table(table) => drop(table.remove("args")),
                    Entry::Inline(table) => drop(table.remove("args")),
                }
            }
            let intended = Stdio {
                command: found.args[at].clone(),
                args: found.args[at + 1..].to_vec(),
            };
            (
                Action::Unwrapped,
                show_command(&intended.command, &intended.args),
                Some(Intended::Stdio(intended)),
                Some(wrapper_of(&found.command, &found.args, at)),
            )
        }
    }
}

/// The keys of a remote Codex server that `install --remote` turns into
/// proxy arguments.
const REMOTE_KEYS: [&str; 4] = [
    "url",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
];

/// `install --remote` on a Codex server with a `url`: `url` becomes
/// `command` and `args` (`drainpipe proxy … --url URL --header …`) in its
/// place; `http_headers` are copied, `env_http_headers` and
/// `bearer_token_env_var` become `${VAR}` headers whose variables are added
/// to `env_vars` (Codex passes only those, and a few of its own, to a stdio
/// server).
fn wrap_remote(entry: &mut Entry<'_>, wrapper: &Wrapper, url: String) -> Outcome {
    let skipped = |reason: &str, url: String| (Action::Skipped(reason.into()), url, None, None);
    let item = |key: &str| entry.get(key);
    let Some(address) = item("url").and_then(|url| url.as_str().map(str::to_string)) else {
        return skipped("url is not a string", url);
    };
    if item("command").is_some() || item("args").is_some() {
        return skipped("it has both a url and a command", url);
    }
    let mut headers = Vec::new();
    let mut variables: Vec<String> = Vec::new();
    for (key, by_variable) in [("http_headers", false), ("env_http_headers", true)] {
        let Some(found) = item(key) else { continue };
        let Some(map) = found.as_table_like() else {
            return skipped(&format!("{key} is not a table"), url);
        };
        for (name, value) in map.iter() {
            let Some(value) = value.as_str() else {
                return skipped(&format!("{key} holds something other than strings"), url);
            };
            if by_variable {
                headers.push((name.to_string(), format!("${{{value}}}")));
                variables.push(value.to_string());
            } else {
                headers.push((name.to_string(), value.to_string()));
            }
        }
    }
    if let Some(found) = item("bearer_token_env_var") {
        let Some(variable) = found.as_str() else {
            return skipped("bearer_token_env_var is not a string", url);
        };
        headers.push(("Authorization".into(), format!("Bearer ${{{variable}}}")));
        variables.push(variable.to_string());
    }
    let mut env_vars = match item("env_vars") {
        None => None,
        Some(found) => match found.as_array() {
            Some(array) => Some(array.clone()),
            None => return skipped("env_vars is not a list", url),
        },
    };
    let listed: Vec<String> = env_vars
        .iter()
        .flat_map(|array| array.iter().filter_map(Value::as_str).map(str::to_string))
        .collect();
    variables.retain(|variable| !listed.contains(variable));
    variables.dedup();
    let new_env_vars = !variables.is_empty() && env_vars.is_none();
    if !variables.is_empty() {
        let array = env_vars.get_or_insert_with(Array::new);
        for variable in &variables {
            array.push(variable.as_str());
        }
    }
    let remote = Remote {
        url: address,
        headers,
        // Codex's entries have no OAuth client block.
        oauth: Vec::new(),
    };
    let args = wrapper.remote_args(&remote);
    let mut rebuilt = Vec::new();
    for (key, item) in entry.take_all() {
        match key.get() {
            "url" => {
                rebuilt.push(in_place_of(&key, &item, "command", &wrapper.command));
                rebuilt.push((
                    like(&key, "args"),
                    spaced(Value::Array(args.iter().map(String::as_str).collect())),
                ));
                if let (true, Some(array)) = (new_env_vars, &env_vars) {
                    rebuilt.push((like(&key, "env_vars"), spaced(Value::Array(array.clone()))));
                }
            }
            "env_vars" if !new_env_vars && !variables.is_empty() => {
                let array = env_vars.clone().expect("env_vars was read above");
                let mut value = Value::Array(array);
                if let Some(old) = item.as_value() {
                    *value.decor_mut() = old.decor().clone();
                }
                rebuilt.push((key, Item::Value(value)));
            }
            name if REMOTE_KEYS.contains(&name) => {}
            _ => rebuilt.push((key, item)),
        }
    }
    for (key, item) in rebuilt {
        entry.put(&key, item);
    }
    let intended = Stdio {
        command: wrapper.command.clone(),
        args,
    };
    (Action::Wrapped, url, Some(Intended::Stdio(intended)), None)
}

/// `uninstall` in place on a Codex server `install --remote` wrapped (the
/// backup restores the exact bytes; this is for a file changed since):
/// `command` becomes `url`, `args` goes, and the headers come back as
/// `bearer_token_env_var` (`Authorization: Bearer ${VAR}`),
/// `env_http_headers` (a value that is just `${VAR}`) or `http_headers`.
/// `env_vars` stays.
fn unwrap_remote(entry: &mut Entry<'_>, remote: &Remote) {
    let mut bearer = None;
    let mut by_variable = InlineTable::new();
    let mut literal = InlineTable::new();
    for (name, value) in &remote.headers {
        let variable = |text: &str| {
            text.strip_prefix("${")
                .and_then(|rest| rest.strip_suffix('}'))
                .filter(|inner| !inner.contains(['{', '}', '$']))
                .map(str::to_string)
        };
        if bearer.is_none()
            && name.eq_ignore_ascii_case("authorization")
            && let Some(found) = value.strip_prefix("Bearer ").and_then(variable)
        {
            bearer = Some(found);
        } else if let Some(found) = variable(value) {
            by_variable.insert(name, Value::from(found));
        } else {
            literal.insert(name, Value::from(value.as_str()));
        }
    }
    let mut rebuilt = Vec::new();
    for (key, item) in entry.take_all() {
        match key.get() {
            "command" => {
                rebuilt.push(in_place_of(&key, &item, "url", &remote.url));
                if !literal.is_empty() {
                    let value = Value::InlineTable(literal.clone());
                    rebuilt.push((like(&key, "http_headers"), spaced(value)));
                }
                if !by_variable.is_empty() {
                    let value = Value::InlineTable(by_variable.clone());
                    rebuilt.push((like(&key, "env_http_headers"), spaced(value)));
                }
                if let Some(variable) = &bearer {
                    let value = Value::from(variable.as_str());
                    rebuilt.push((like(&key, "bearer_token_env_var"), spaced(value)));
                }
            }
            "args" => {}
            _ => rebuilt.push((key, item)),
        }
    }
    for (key, item) in rebuilt {
        entry.put(&key, item);
    }
}

/// A key named `name` at `model`'s indentation, ` = ` after it.
/// The string key `name` with `value`, written where `key` and `item`
/// stood, in their spacing (a `url` becoming a `command`, and back).
fn in_place_of(key: &Key, item: &Item, name: &str, value: &str) -> (Key, Item) {
    let mut value = Value::from(value);
    if let Some(old) = item.as_value() {
        *value.decor_mut() = old.decor().clone();
    }
    let mut new_key = Key::new(name);
    *new_key.leaf_decor_mut() = key.leaf_decor().clone();
    (new_key, Item::Value(value))
}

fn like(model: &Key, name: &str) -> Key {
    let mut key = Key::new(name);
    let indent = model
        .leaf_decor()
        .prefix()
        .and_then(|prefix| prefix.as_str())
        .map(|prefix| prefix[prefix.rfind('\n').map_or(0, |at| at + 1)..].to_string())
        .filter(|indent| indent.trim().is_empty())
        .unwrap_or_default();
    key.leaf_decor_mut().set_prefix(indent);
    key.leaf_decor_mut().set_suffix(" ");
    key
}

/// A value with one space before it (after `=`) and none after.
fn spaced(mut value: Value) -> Item {
    value.decor_mut().set_prefix(" ");
    value.decor_mut().set_suffix("");
    Item::Value(value)
}

impl Entry<'_> {
    /// A copy of the item at `key`.
    fn get(&self, key: &str) -> Option<Item> {
        match self {
            Entry::Table(table) => table.get(key).cloned(),
            Entry::Inline(table) => table.get(key).cloned().map(Item::Value),
        }
    }

    /// Every key and item, in order, taken out of the table.
    fn take_all(&mut self) -> Vec<(Key, Item)> {
        match self {
            Entry::Table(table) => {
                let keys: Vec<String> = table.iter().map(|(key, _)| key.to_string()).collect();
                keys.iter()
                    .filter_map(|key| table.remove_entry(key))
                    .collect()
            }
            Entry::Inline(table) => {
                let keys: Vec<String> = table.iter().map(|(key, _)| key.to_string()).collect();
                keys.iter()
                    .filter_map(|key| table.remove_entry(key))
                    .map(|(key, value)| (key, Item::Value(value)))
                    .collect()
            }
        }
    }

    /// Puts `item` at `key`, last, keeping its formatting.
    fn put(&mut self, key: &Key, item: Item) {
        match (self, item) {
            (Entry::Table(table), item) => {
                table.insert_formatted(key, item);
            }
            (Entry::Inline(table), Item::Value(value)) => {
                table.insert_formatted(key, value);
            }
            (Entry::Inline(_), _) => unreachable!("an inline table holds values only"),
        }
    }
}

fn command_value<'e>(entry: &'e mut Entry<'_>) -> &'e mut Value {
    match entry {
        Entry::Table(table) => table
            .get_mut("command")
            .and_then(Item::as_value_mut)
            .expect("read() found a command"),
        Entry::Inline(table) => table.get_mut("command").expect("read() found a command"),
    }
}

/// Replaces the command, keeping what surrounds the old value.
fn set_command(entry: &mut Entry<'_>, mut value: Value) {
    let slot = command_value(entry);
    *value.decor_mut() = slot.decor().clone();
    *slot = value;
}

fn args_array<'e>(entry: &'e mut Entry<'_>) -> Option<&'e mut Array> {
    match entry {
        Entry::Table(table) => table.get_mut("args").and_then(Item::as_array_mut),
        Entry::Inline(table) => table.get_mut("args").and_then(Value::as_array_mut),
    }
}

/// Puts `words` in front of the array's elements in the array's layout.
fn insert_front(array: &mut Array, words: Vec<Value>) {
    if array.is_empty() {
        for word in words {
            array.push_formatted(word);
        }
        return;
    }
    let first_prefix = array.get(0).and_then(|word| word.decor().prefix()).cloned();
    let first_text = first_prefix
        .as_ref()
        .and_then(|prefix| prefix.as_str())
        .unwrap_or("")
        .to_string();
    let model = match array.get(1).and_then(|word| word.decor().prefix()) {
        Some(prefix) => prefix.as_str().unwrap_or(" ").to_string(),
        None => first_text.clone(),
    };
    // One element per line at the first one's indentation, or the one-line
    // separator, without any comment the model prefix holds.
    let separator = match model.rfind('\n') {
        Some(newline) => model[newline..].to_string(),
        None if model.trim().is_empty() && !model.is_empty() => model,
        None => " ".to_string(),
    };
    let count = words.len();
    for (index, mut word) in words.into_iter().enumerate() {
        let decor = word.decor_mut();
        decor.clear();
        match (&first_prefix, index) {
            (Some(prefix), 0) => decor.set_prefix(prefix.clone()),
            (None, 0) => decor.set_prefix(""),
            _ => decor.set_prefix(separator.clone()),
        }
        decor.set_suffix("");
        array.insert_formatted(index, word);
    }
    if let Some(old_first) = array.get_mut(count) {
        old_first.decor_mut().set_prefix(separator);
    }
}

/// Adds `args` right after `command`, at the command's indentation.
fn insert_args(entry: &mut Entry<'_>, args: Array) {
    match entry {
        Entry::Table(table) => {
            let after = keys_after(table.iter().map(|(key, _)| key.to_string()));
            let moved: Vec<(Key, Item)> = after
                .iter()
                .filter_map(|key| table.remove_entry(key))
                .collect();
            let indent = table
                .key("command")
                .and_then(|key| key.leaf_decor().prefix())
                .and_then(|prefix| prefix.as_str())
                .map(|prefix| prefix[prefix.rfind('\n').map_or(0, |at| at + 1)..].to_string())
                .filter(|indent| indent.trim().is_empty())
                .unwrap_or_default();
            let mut key = Key::new("args");
            key.leaf_decor_mut().set_prefix(indent);
            key.leaf_decor_mut().set_suffix(" ");
            let mut value = Value::Array(args);
            value.decor_mut().set_prefix(" ");
            table.insert_formatted(&key, Item::Value(value));
            for (key, item) in moved {
                table.insert_formatted(&key, item);
            }
        }
        Entry::Inline(table) => {
            let after = keys_after(table.iter().map(|(key, _)| key.to_string()));
            let moved: Vec<(Key, Value)> = after
                .iter()
                .filter_map(|key| table.remove_entry(key))
                .collect();
            table.insert("args", Value::Array(args));
            for (key, value) in moved {
                table.insert_formatted(&key, value);
            }
        }
    }
}

/// The keys that come after `command`.
fn keys_after(keys: impl Iterator<Item = String>) -> Vec<String> {
    keys.skip_while(|key| key != "command").skip(1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper() -> Wrapper {
        Wrapper {
            command: "/home/me/.cargo/bin/drainpipe".to_string(),
            launcher: Vec::new(),
            proxy_args: vec!["--max-frame".into(), "8MiB".into()],
            remote: false,
        }
    }

    const CODEX: &str = r#"# Codex configuration
model = "o4-mini"

[mcp_servers.filesystem]
command = "npx" # the package runner
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
env = { "DEBUG" = "1" }
cwd = "/home/me"

[mcp_servers.git]
command = 'uvx'
startup_timeout_sec = 20

[mcp_servers.git.env]
GIT_DIR = "/home/me/.git"

[mcp_servers.multi]
command = "node"
args = [
    # the entry point
    "server.js",
    "--verbose",
]

[mcp_servers.docs]
url = "https://docs.example/mcp"
bearer_token_env_var = "DOCS_TOKEN"

[mcp_servers.guarded]
command = "drainpipe"
args = ["proxy", "--", "python3", "-m", "srv"]

[profiles.fast]
model = "gpt-5"
"#;

    #[test]
    fn codex_servers_are_wrapped_in_place_and_come_back_byte_for_byte() {
        let wrapped = wrap(CODEX, &wrapper()).unwrap();
        let expected = r#"# Codex configuration
model = "o4-mini"

[mcp_servers.filesystem]
command = "/home/me/.cargo/bin/drainpipe" # the package runner
args = ["proxy", "--max-frame", "8MiB", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
env = { "DEBUG" = "1" }
cwd = "/home/me"

[mcp_servers.git]
command = "/home/me/.cargo/bin/drainpipe"
args = ["proxy", "--max-frame", "8MiB", "--", 'uvx']
startup_timeout_sec = 20

[mcp_servers.git.env]
GIT_DIR = "/home/me/.git"

[mcp_servers.multi]
command = "/home/me/.cargo/bin/drainpipe"
args = [
    # the entry point
    "proxy",
    "--max-frame",
    "8MiB",
    "--",
    "node",
    "server.js",
    "--verbose",
]

[mcp_servers.docs]
url = "https://docs.example/mcp"
bearer_token_env_var = "DOCS_TOKEN"

[mcp_servers.guarded]
command = "drainpipe"
args = ["proxy", "--", "python3", "-m", "srv"]

[profiles.fast]
model = "gpt-5"
"#;
        assert_eq!(wrapped.text, expected);
        let actions: Vec<_> = wrapped
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.action.clone()))
            .collect();
        assert_eq!(
            actions,
            vec![
                ("filesystem", Action::Wrapped),
                ("git", Action::Wrapped),
                ("multi", Action::Wrapped),
                ("docs", Action::Remote),
                ("guarded", Action::AlreadyWrapped),
            ]
        );
        let again = wrap(&wrapped.text, &wrapper()).unwrap();
        assert_eq!(again.text, wrapped.text);
        assert!(!again.changed());
        // Unwrapping restores every server install touched, byte for byte;
        // the one wrapped by hand is unwrapped as well.
        let unwrapped = unwrap(&wrapped.text, &wrapper()).unwrap();
        let by_hand = unwrap(CODEX, &wrapper()).unwrap();
        assert_eq!(unwrapped.text, by_hand.text);
        assert_eq!(
            by_hand.text,
            CODEX.replace(
                "command = \"drainpipe\"\nargs = [\"proxy\", \"--\", \"python3\", \"-m\", \"srv\"]",
                "command = \"python3\"\nargs = [\"-m\", \"srv\"]"
            )
        );
        assert!(!unwrap(&unwrapped.text, &wrapper()).unwrap().changed());
    }

    #[test]
    fn codex_remote_servers_are_wrapped_with_remote() {
        let text = r#"[mcp_servers.docs]
url = "https://docs.example/mcp" # the docs
bearer_token_env_var = "DOCS_TOKEN"
startup_timeout_sec = 20

[mcp_servers.catalog]
url = "https://catalog.example/mcp"
http_headers = { "X-Client" = "review" }
env_http_headers = { "X-Key" = "CATALOG_KEY" }
env_vars = ["HOME"]

[mcp_servers.plain]
url = "https://plain.example/mcp"
"#;
        let remote = Wrapper {
            remote: true,
            ..wrapper()
        };
        let wrapped = wrap(text, &remote).unwrap();
        assert_eq!(
            wrapped.text,
            r#"[mcp_servers.docs]
command = "/home/me/.cargo/bin/drainpipe" # the docs
args = ["proxy", "--max-frame", "8MiB", "--url", "https://docs.example/mcp", "--header", "Authorization: Bearer ${DOCS_TOKEN}"]
env_vars = ["DOCS_TOKEN"]
startup_timeout_sec = 20

[mcp_servers.catalog]
command = "/home/me/.cargo/bin/drainpipe"
args = ["proxy", "--max-frame", "8MiB", "--url", "https://catalog.example/mcp", "--header", "X-Client: review", "--header", "X-Key: ${CATALOG_KEY}"]
env_vars = ["HOME", "CATALOG_KEY"]

[mcp_servers.plain]
command = "/home/me/.cargo/bin/drainpipe"
args = ["proxy", "--max-frame", "8MiB", "--url", "https://plain.example/mcp"]
"#
        );
        assert!(wrapped.servers.iter().all(|s| s.action == Action::Wrapped));
        assert!(!wrap(&wrapped.text, &remote).unwrap().changed());
        assert_eq!(wrap(text, &wrapper()).unwrap().text, text);
        // In place, each header goes back to the key it came from.
        let back = unwrap(&wrapped.text, &remote).unwrap();
        assert_eq!(
            back.text,
            r#"[mcp_servers.docs]
url = "https://docs.example/mcp" # the docs
bearer_token_env_var = "DOCS_TOKEN"
env_vars = ["DOCS_TOKEN"]
startup_timeout_sec = 20

[mcp_servers.catalog]
url = "https://catalog.example/mcp"
http_headers = { X-Client = "review" }
env_http_headers = { X-Key = "CATALOG_KEY" }
env_vars = ["HOME", "CATALOG_KEY"]

[mcp_servers.plain]
url = "https://plain.example/mcp"
"#
        );
        assert_eq!(back.servers[0].wrapper, Some(remote));
    }

    #[test]
    fn inline_tables_and_indented_keys_keep_their_layout() {
        let text = r#"[mcp_servers]
inline = { command = "x", env = { A = "1" } }
listed = { command = "y", args = ["a"] }

  [mcp_servers.indented]
  command = "z"
  cwd = "/tmp"
"#;
        let wrapped = wrap(text, &wrapper()).unwrap();
        assert_eq!(
            wrapped.text,
            r#"[mcp_servers]
inline = { command = "/home/me/.cargo/bin/drainpipe", args = ["proxy", "--max-frame", "8MiB", "--", "x"], env = { A = "1" } }
listed = { command = "/home/me/.cargo/bin/drainpipe", args = ["proxy", "--max-frame", "8MiB", "--", "y", "a"] }

  [mcp_servers.indented]
  command = "/home/me/.cargo/bin/drainpipe"
  args = ["proxy", "--max-frame", "8MiB", "--", "z"]
  cwd = "/tmp"
"#
        );
        assert_eq!(unwrap(&wrapped.text, &wrapper()).unwrap().text, text);
    }

    #[test]
    fn a_toml_file_that_does_not_parse_names_line_and_column() {
        let text = "model = \"x\"\n[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\",\n";
        let Err(EditError::Parse(error)) = wrap(text, &wrapper()) else {
            panic!("an unterminated array parsed");
        };
        assert_eq!(error.line, 4, "{error}");
        assert!(error.message.contains("unclosed array"), "{error}");
        let Err(EditError::Parse(error)) = wrap("a = 1\nb = = 2\n", &wrapper()) else {
            panic!("a doubled = parsed");
        };
        assert_eq!((error.line, error.column), (2, 5), "{error}");
    }

    #[test]
    fn odd_entries_are_left_alone() {
        let text = "[mcp_servers]\nflag = true\n[mcp_servers.a]\nargs = [\"x\"]\n[mcp_servers.b]\ncommand = \"x\"\nargs = \"--y\"\n";
        let edit = wrap(text, &wrapper()).unwrap();
        assert_eq!(edit.text, text);
        assert!(
            edit.servers
                .iter()
                .all(|s| matches!(s.action, Action::Skipped(_)))
        );
        assert!(has_servers(text).unwrap());
        assert!(!has_servers("model = \"x\"\n").unwrap());
    }
}
