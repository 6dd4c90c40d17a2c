//! Editing JSON and JSON-with-comments configuration files in place.
//!
//! The file is parsed with `jsonc-parser`'s AST, which gives the byte range
//! of every value and property, comments and trailing commas allowed. The
//! edit is then a handful of text splices at those ranges: the `command`
//! value is replaced, the new words are inserted in front of the first
//! element of `args` (or a new `args` property is inserted after `command`),
//! and nothing else in the file is touched. So comments, key order,
//! indentation, line endings and the spelling of every other value stay as
//! they were.
//!
//! Why not `jsonc-parser`'s own CST editor (feature `cst`): it was tried and
//! reformats what it touches. Inserting into a one-line array left runs of
//! spaces (`["proxy", "--", "npx",   "-y"]`), adding a property to a one-line
//! object made it multi-line, and removing elements left the whitespace of
//! the removed ones behind. Splicing keeps the file as its owner wrote it, and
//! makes `uninstall` the exact inverse of `install`.
//!
//! After every edit the new text is parsed again and compared, as data, with
//! the old data plus the intended change; a mismatch is an error and nothing
//! is written.
//!
//! Accepted input: JSON, comments (`//`, `/* */`), trailing commas, and the
//! JSON5 liberties `jsonc-parser` allows (unquoted keys, single quotes, hex
//! numbers). A missing comma between members is refused even though the
//! parser could accept it: no host reads such a file, and the splices rely
//! on commas being where JSON puts them. A UTF-8 byte order mark is kept.

use jsonc_parser::ast::{Array, Object, ObjectProp, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::Value as Json;

use super::remote::{
    OAuthBlock, Reference, Remote, SECRET_VARIABLE, header_value, loopback_port, oauth_args,
    oauth_block, remote_of,
};
use super::wrap::{
    Action, Edit, EditError, ParseError, ServerReport, Wrapper, original_command_index,
    show_command, wrapper_of,
};

/// Which JSON layout a file uses for its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// A top-level `mcpServers` map (Claude Desktop, Claude Code, Cursor,
    /// Windsurf, Gemini CLI), plus the per-project maps of `~/.claude.json`:
    /// `projects.<path>.mcpServers`.
    McpServers,
    /// VS Code's `mcp.json`: a top-level `servers` map.
    VsCode,
    /// Zed's `settings.json`: a top-level `context_servers` map, whose
    /// entries have `command` as a string (current Zed) or as an object
    /// `{path, args, env}` (older Zed).
    Zed,
}

impl Dialect {
    /// Whether the hosts of this layout expand a variable reference in an
    /// entry's `env` (`"TOKEN": "${env:TOKEN}"`), so that a header's
    /// variable can be handed to the proxy there. Zed does not: its proxy
    /// inherits Zed's own environment instead.
    fn expands_env(self) -> bool {
        matches!(self, Dialect::McpServers | Dialect::VsCode)
    }
}

/// `install`: wraps every stdio server of the file's server maps.
pub(crate) fn wrap(text: &str, dialect: Dialect, wrapper: &Wrapper) -> Result<Edit, EditError> {
    edit(text, dialect, wrapper, Mode::Wrap)
}

/// `uninstall`: takes drainpipe away from every wrapped server.
pub(crate) fn unwrap(text: &str, dialect: Dialect, wrapper: &Wrapper) -> Result<Edit, EditError> {
    edit(text, dialect, wrapper, Mode::Unwrap)
}

/// The server maps a file holds at its top level (for telling formats
/// apart): one dialect per kind of map found, in a fixed order.
pub(crate) fn dialects_present(text: &str) -> Result<Vec<Dialect>, ParseError> {
    let (_, body) = split_bom(text);
    let root = parse(body)?;
    let Some(Value::Object(root)) = &root else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    if sections(root, Dialect::McpServers).next().is_some() {
        found.push(Dialect::McpServers);
    }
    if get(root, "servers").is_some() {
        found.push(Dialect::VsCode);
    }
    if get(root, "context_servers").is_some() {
        found.push(Dialect::Zed);
    }
    Ok(found)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Wrap,
    Unwrap,
}

/// Replace `start..end` of the text with `text` (an insertion when empty).
#[derive(Debug)]
struct Splice {
    start: usize,
    end: usize,
    text: String,
}

impl Splice {
    fn insert(at: usize, text: impl Into<String>) -> Self {
        Splice {
            start: at,
            end: at,
            text: text.into(),
        }
    }

    fn replace(start: usize, end: usize, text: impl Into<String>) -> Self {
        Splice {
            start,
            end,
            text: text.into(),
        }
    }

    fn delete(start: usize, end: usize) -> Self {
        Splice::replace(start, end, "")
    }
}

/// What an edit does to one entry's data, for the check after the edit.
struct Change {
    /// Keys from the root to the object that holds `command` and `args`.
    path: Vec<String>,
    /// Properties given a (new) value.
    set: Vec<(String, Json)>,
    /// Properties removed.
    remove: Vec<String>,
}

impl Change {
    /// A stdio entry's new command, and its new arguments (`None`: removed).
    fn command(
        path: &[String],
        command_key: &str,
        command: &str,
        args: Option<Vec<String>>,
    ) -> Self {
        let mut change = Change {
            path: path.to_vec(),
            set: vec![(command_key.to_string(), Json::from(command))],
            remove: Vec::new(),
        };
        match args {
            Some(args) => change.set.push(("args".to_string(), Json::from(args))),
            None => change.remove.push("args".to_string()),
        }
        change
    }
}

/// A server entry found in the file.
enum Found<'t, 'a> {
    /// A stdio server, or one behind drainpipe (remote or not).
    Stdio(Target<'t, 'a>),
    /// A remote server that names its URL.
    Remote(RemoteTarget<'t, 'a>),
}

/// A remote server entry: its URL and the properties that `install
/// --remote` rewrites.
struct RemoteTarget<'t, 'a> {
    object: &'t Object<'a>,
    url_prop: &'t ObjectProp<'a>,
    url: String,
    type_prop: Option<&'t ObjectProp<'a>>,
    headers_prop: Option<&'t ObjectProp<'a>>,
    env_prop: Option<&'t ObjectProp<'a>>,
    /// Gemini CLI's and Claude Code's OAuth client settings.
    oauth_prop: Option<&'t ObjectProp<'a>>,
    /// Keys from the root to `object`.
    path: Vec<String>,
}

/// A stdio server entry found in the file.
struct Target<'t, 'a> {
    /// The object that holds the command and its arguments (the entry, or
    /// the object under an older Zed entry's `command`).
    object: &'t Object<'a>,
    command_key: &'static str,
    command_prop: &'t ObjectProp<'a>,
    command: String,
    args_prop: Option<&'t ObjectProp<'a>>,
    args_array: Option<&'t Array<'a>>,
    args: Vec<String>,
    /// Keys from the root to `object`.
    path: Vec<String>,
}

fn edit(text: &str, dialect: Dialect, wrapper: &Wrapper, mode: Mode) -> Result<Edit, EditError> {
    let (bom, body) = split_bom(text);
    // Positions are counted after the byte order mark, as editors show them.
    let root = parse(body).map_err(EditError::Parse)?;
    let root = match &root {
        None => {
            return Ok(Edit {
                text: text.to_string(),
                servers: Vec::new(),
            });
        }
        Some(Value::Object(root)) => root,
        Some(_) => {
            return Err(EditError::Parse(ParseError::at(
                body,
                0,
                "the file is not a JSON object",
            )));
        }
    };
    let newline = if body.contains("\r\n") { "\r\n" } else { "\n" };
    let mut splices = Vec::new();
    let mut servers = Vec::new();
    let mut changes = Vec::new();
    for (scope, section_path, section) in sections(root, dialect) {
        for entry in &section.properties {
            let name = entry.name.as_str().to_string();
            let mut path = section_path.clone();
            path.push(name.clone());
            let found = match classify(&entry.value, dialect, path) {
                Ok(found) => found,
                Err((action, detail)) => {
                    servers.push(ServerReport {
                        scope: scope.clone(),
                        name,
                        action,
                        detail,
                        wrapper: None,
                    });
                    continue;
                }
            };
            let (action, detail, wrapper) = match (found, mode) {
                (Found::Remote(target), Mode::Wrap) if wrapper.remote => {
                    let (action, edit) =
                        wrap_remote_entry(body, newline, dialect, &target, wrapper);
                    if let Some((new_splices, change)) = edit {
                        splices.extend(new_splices);
                        changes.push(change);
                    }
                    (action, target.url, None)
                }
                (Found::Remote(target), _) => (Action::Remote, target.url, None),
                (Found::Stdio(target), Mode::Wrap) => {
                    let (action, detail) =
                        wrap_entry(body, newline, &target, wrapper, &mut splices, &mut changes);
                    (action, detail, None)
                }
                (Found::Stdio(target), Mode::Unwrap) => {
                    unwrap_entry(body, &target, wrapper, &mut splices, &mut changes)
                }
            };
            servers.push(ServerReport {
                scope: scope.clone(),
                name,
                action,
                detail,
                wrapper,
            });
        }
    }
    if splices.is_empty() {
        return Ok(Edit {
            text: text.to_string(),
            servers,
        });
    }
    let new_body = apply(body, splices);
    check(body, &new_body, &changes)?;
    Ok(Edit {
        text: format!("{bom}{new_body}"),
        servers,
    })
}

fn wrap_entry(
    body: &str,
    newline: &str,
    target: &Target<'_, '_>,
    wrapper: &Wrapper,
    splices: &mut Vec<Splice>,
    changes: &mut Vec<Change>,
) -> (Action, String) {
    if wrapper.is_wrapped(&target.command, &target.args) {
        return (
            Action::AlreadyWrapped,
            show_command(&target.command, &target.args),
        );
    }
    let detail = show_command(&target.command, &target.args);
    let command_range = &target.command_prop.value.range();
    splices.push(Splice::replace(
        command_range.start,
        command_range.end,
        quote(&wrapper.command),
    ));
    // The original command goes in as it was spelled in the file, so that
    // taking it back out restores the same bytes.
    let mut words: Vec<String> = wrapper.prefix().iter().map(|word| quote(word)).collect();
    words.push(body[command_range.start..command_range.end].to_string());
    match target.args_array {
        Some(array) if !array.elements.is_empty() => {
            let separator = element_separator(body, newline, array);
            let mut text = words.join(&separator);
            text.push_str(&separator);
            splices.push(Splice::insert(array.elements[0].range().start, text));
        }
        Some(array) => {
            splices.push(Splice::insert(array.range.start + 1, words.join(", ")));
        }
        None => splices.extend(insert_args_after(
            body,
            newline,
            target.command_prop,
            &format!("\"args\": [{}]", words.join(", ")),
        )),
    }
    let mut args = wrapper.prefix();
    args.push(target.command.clone());
    args.extend(target.args.iter().cloned());
    changes.push(Change::command(
        &target.path,
        target.command_key,
        &wrapper.command,
        Some(args),
    ));
    (Action::Wrapped, detail)
}

/// `install --remote` on a remote entry: its URL property becomes `command`
/// and `args` (`drainpipe proxy … --url URL --header …`) in the same place,
/// a `type` becomes `"stdio"`, `headers` goes, and the variables the
/// headers refer to go into `env` where the host expands them there. The
/// action, and the splices and the change when the entry is rewritten.
fn wrap_remote_entry(
    body: &str,
    newline: &str,
    dialect: Dialect,
    target: &RemoteTarget<'_, '_>,
    wrapper: &Wrapper,
) -> (Action, Option<(Vec<Splice>, Change)>) {
    let skipped = |reason: &str| (Action::Skipped(reason.to_string()), None);
    if get(target.object, "command").is_some() || get(target.object, "args").is_some() {
        return skipped("it has both a URL and a command");
    }
    let mut headers = Vec::new();
    let mut references: Vec<Reference> = Vec::new();
    if let Some(prop) = target.headers_prop {
        let Value::Object(map) = &prop.value else {
            return skipped("headers is not an object");
        };
        for header in &map.properties {
            let Value::StringLit(value) = &header.value else {
                return skipped("headers hold something other than strings");
            };
            let (value, found) = header_value(&value.value);
            headers.push((header.name.as_str().to_string(), value));
            for reference in found {
                if !references.iter().any(|seen| seen.name == reference.name) {
                    references.push(reference);
                }
            }
        }
    }
    let env = match target.env_prop.map(|prop| &prop.value) {
        Some(Value::Object(env)) => Some(env),
        Some(_) => return skipped("env is not an object"),
        None => None,
    };
    // Variables the entry's `env` sets already keep their value.
    if !dialect.expands_env() {
        references.clear();
    }
    let (oauth, oauth_references, literal_secret) = match target.oauth_prop {
        None => (Vec::new(), Vec::new(), None),
        Some(prop) => match read_oauth_block(&prop.value) {
            Ok(block) => oauth_args(&block),
            Err(reason) => return skipped(&reason),
        },
    };
    if dialect.expands_env() {
        for reference in oauth_references {
            if !references.iter().any(|seen| seen.name == reference.name) {
                references.push(reference);
            }
        }
    }
    if literal_secret.is_some() && env.is_some_and(|env| get(env, SECRET_VARIABLE).is_some()) {
        return skipped(&format!("its env already sets {SECRET_VARIABLE}"));
    }
    references.retain(|reference| env.is_none_or(|env| get(env, &reference.name).is_none()));
    let remote = Remote {
        url: target.url.clone(),
        headers,
        oauth,
    };
    let args = wrapper.remote_args(&remote);
    let words: Vec<String> = args.iter().map(|word| quote(word)).collect();
    let mut splices = vec![Splice::replace(
        target.url_prop.range.start,
        target.url_prop.range.end,
        format!(
            "\"command\": {}{}\"args\": [{}]",
            quote(&wrapper.command),
            property_separator(body, newline, target.url_prop),
            words.join(", ")
        ),
    )];
    let mut change = Change::command(&target.path, "command", &wrapper.command, Some(args));
    change
        .remove
        .push(target.url_prop.name.as_str().to_string());
    if let Some(prop) = target.type_prop {
        let range = prop.value.range();
        splices.push(Splice::replace(range.start, range.end, quote("stdio")));
        change.set.push(("type".to_string(), Json::from("stdio")));
    }
    // The variables the proxy reads: header and OAuth references, and a
    // literal client secret moved out of the arguments.
    let mut variables: Vec<(String, String)> = references
        .iter()
        .map(|reference| (reference.name.clone(), reference.spelled.clone()))
        .collect();
    if let Some(secret) = literal_secret {
        variables.push((SECRET_VARIABLE.to_string(), secret));
    }
    let pairs: Vec<String> = variables
        .iter()
        .map(|(name, value)| format!("{}: {}", quote(name), quote(value)))
        .collect();
    let mut new_env = match target.env_prop.map(|prop| data(&prop.value)) {
        Some(Json::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    for (name, value) in &variables {
        new_env.insert(name.clone(), Json::from(value.clone()));
    }
    // `headers` and `oauth` go; the first one gives its place to a new
    // `env` when the entry has none.
    let mut env_placed = env.is_some() || pairs.is_empty();
    let mut removed = Vec::new();
    for (key, prop) in [
        ("headers", target.headers_prop),
        ("oauth", target.oauth_prop),
    ] {
        let Some(prop) = prop else { continue };
        change.remove.push(key.to_string());
        if env_placed {
            removed.push(prop);
        } else {
            splices.push(Splice::replace(
                prop.range.start,
                prop.range.end,
                format!("\"env\": {{ {} }}", pairs.join(", ")),
            ));
            env_placed = true;
        }
    }
    splices.extend(remove_properties(body, target.object, &removed));
    if let Some(env) = env
        && !pairs.is_empty()
    {
        splices.push(insert_properties(body, newline, env, &pairs));
    }
    if !pairs.is_empty() {
        change.set.push(("env".to_string(), Json::Object(new_env)));
    }
    (Action::Wrapped, Some((splices, change)))
}

/// What goes between `prop` and a property added after it: a comma and
/// the same indentation on a new line when `prop` has a line of its own,
/// else `, `.
fn property_separator(body: &str, newline: &str, prop: &ObjectProp<'_>) -> String {
    let indent = &body[line_start(body, prop.range.start)..prop.range.start];
    if is_blank(indent) {
        format!(",{newline}{indent}")
    } else {
        ", ".to_string()
    }
}

/// The splice that puts `pairs` (`"NAME": "value"` texts) first in
/// `object`, in its layout: one per line at the first property's
/// indentation when that is on a line of its own, else `, ` apart.
fn insert_properties(body: &str, newline: &str, object: &Object<'_>, pairs: &[String]) -> Splice {
    let Some(first) = object.properties.first() else {
        return Splice::insert(object.range.start + 1, format!(" {} ", pairs.join(", ")));
    };
    let start = first.range.start;
    let indent = &body[line_start(body, start)..start];
    let separator = if body[object.range.start + 1..start].contains('\n') && is_blank(indent) {
        format!(",{newline}{indent}")
    } else {
        ", ".to_string()
    };
    let mut text = pairs.join(&separator);
    text.push_str(&separator);
    Splice::insert(start, text)
}

/// `uninstall` on one entry: the action, the report's detail, and the
/// wrapper the entry had when it is unwrapped.
fn unwrap_entry(
    body: &str,
    target: &Target<'_, '_>,
    wrapper: &Wrapper,
    splices: &mut Vec<Splice>,
    changes: &mut Vec<Change>,
) -> (Action, String, Option<Wrapper>) {
    let shown = show_command(&target.command, &target.args);
    if !wrapper.is_wrapped(&target.command, &target.args) {
        return (Action::NotWrapped, shown, None);
    }
    if target.command_key == "command"
        && let Some(found) = remote_of(&target.command, &target.args)
    {
        return match found {
            Ok((used, remote)) => {
                let (new_splices, change) = unwrap_remote_entry(body, target, &remote);
                splices.extend(new_splices);
                changes.push(change);
                (Action::Unwrapped, remote.url, Some(used))
            }
            Err(reason) => (
                Action::Skipped(format!("cannot unwrap: {reason}")),
                shown,
                None,
            ),
        };
    }
    let at = match original_command_index(&target.command, &target.args) {
        Ok(at) => at,
        Err(reason) => {
            return (
                Action::Skipped(format!("cannot unwrap: {reason}")),
                shown,
                None,
            );
        }
    };
    let (Some(array), Some(args_prop)) = (target.args_array, target.args_prop) else {
        unreachable!("a wrapped entry has arguments");
    };
    let elements = &array.elements;
    let command_range = target.command_prop.value.range();
    let original = elements[at].range();
    splices.push(Splice::replace(
        command_range.start,
        command_range.end,
        body[original.start..original.end].to_string(),
    ));
    let rest = target.args[at + 1..].to_vec();
    if at + 1 < elements.len() {
        splices.push(Splice::delete(
            elements[0].range().start,
            elements[at + 1].range().start,
        ));
    } else {
        // Nothing of the server's own arguments is left: drop the property,
        // as `install` adds one to an entry that had none.
        splices.extend(remove_property(body, target.object, args_prop));
    }
    changes.push(Change::command(
        &target.path,
        target.command_key,
        &target.args[at],
        if rest.is_empty() { None } else { Some(rest) },
    ));
    (
        Action::Unwrapped,
        show_command(&target.args[at], &target.args[at + 1..]),
        Some(wrapper_of(&target.command, &target.args, at)),
    )
}

/// `uninstall` in place on an entry `install --remote` wrapped (the backup
/// restores the exact bytes; this is for a file changed since): `command`
/// becomes `url`, `args` becomes `headers` (or goes), a `"stdio"` type
/// becomes `"http"`. A header variable is spelled back as the entry's `env`
/// spells it (`${env:TOKEN}`); the `env` entries stay.
fn unwrap_remote_entry(
    body: &str,
    target: &Target<'_, '_>,
    remote: &Remote,
) -> (Vec<Splice>, Change) {
    let env = match get(target.object, "env").map(|prop| &prop.value) {
        Some(Value::Object(env)) => env.properties.as_slice(),
        _ => &[],
    };
    let respell = |value: &str| {
        let mut value = value.to_string();
        for prop in env {
            let name = prop.name.as_str();
            if let Value::StringLit(spelled) = &prop.value {
                let (proxy_form, found) = header_value(&spelled.value);
                if proxy_form == format!("${{{name}}}") && found.len() == 1 {
                    value = value.replace(&proxy_form, &found[0].spelled);
                }
            }
        }
        value
    };
    let headers: Vec<(String, String)> = remote
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), respell(value)))
        .collect();
    let mut change = Change {
        path: target.path.clone(),
        set: vec![("url".to_string(), Json::from(remote.url.clone()))],
        remove: vec!["command".to_string(), "args".to_string()],
    };
    let command = target.command_prop.range();
    let mut splices = vec![Splice::replace(
        command.start,
        command.end,
        format!("\"url\": {}", quote(&remote.url)),
    )];
    let args_prop = target.args_prop.expect("a wrapped entry has arguments");
    // What replaces `args`: `headers`, then `oauth`, each if there is one.
    let mut replacing = Vec::new();
    if !headers.is_empty() {
        let pairs: Vec<String> = headers
            .iter()
            .map(|(name, value)| format!("{}: {}", quote(name), quote(value)))
            .collect();
        replacing.push(format!("\"headers\": {{ {} }}", pairs.join(", ")));
        let map: serde_json::Map<String, Json> = headers
            .into_iter()
            .map(|(name, value)| (name, Json::from(value)))
            .collect();
        change.set.push(("headers".to_string(), Json::Object(map)));
    }
    if let Some(block) = oauth_block(&remote.oauth) {
        // The secret as the file had it: the literal kept in `env`, else
        // the reference as `env` spells it.
        let secret = block.client_secret.as_ref().map(|secret| {
            let literal = env.iter().find_map(|prop| match &prop.value {
                Value::StringLit(value)
                    if prop.name.as_str() == SECRET_VARIABLE
                        && *secret == format!("${{{SECRET_VARIABLE}}}") =>
                {
                    Some(value.value.to_string())
                }
                _ => None,
            });
            literal.unwrap_or_else(|| respell(secret))
        });
        let mut map = serde_json::Map::new();
        if block.disabled {
            map.insert("enabled".to_string(), Json::Bool(false));
        }
        if let Some(id) = &block.client_id {
            map.insert("clientId".to_string(), Json::from(respell(id)));
        }
        if let Some(secret) = secret {
            map.insert("clientSecret".to_string(), Json::from(secret));
        }
        if !block.scopes.is_empty() {
            map.insert("scopes".to_string(), Json::from(block.scopes.clone()));
        }
        let mut intended = map.clone();
        if let Some(port) = block.callback_port {
            map.insert("callbackPort".to_string(), Json::from(port));
            // As `data` reads a number back (its text, marked).
            intended.insert(
                "callbackPort".to_string(),
                Json::String(format!("\u{0}number {port}")),
            );
        }
        replacing.push(format!("\"oauth\": {}", Json::Object(map)));
        change
            .set
            .push(("oauth".to_string(), Json::Object(intended)));
    }
    if replacing.is_empty() {
        splices.extend(remove_property(body, target.object, args_prop));
    } else {
        splices.push(Splice::replace(
            args_prop.range.start,
            args_prop.range.end,
            replacing.join(", "),
        ));
    }
    if let Some(prop) = get(target.object, "type")
        && let Value::StringLit(kind) = &prop.value
        && kind.value == "stdio"
    {
        let range = prop.value.range();
        splices.push(Splice::replace(range.start, range.end, quote("http")));
        change.set.push(("type".to_string(), Json::from("http")));
    }
    (splices, change)
}

/// An entry's `oauth` block: `clientId`, `clientSecret`, `scopes`,
/// `callbackPort` (or a loopback `redirectUri`'s port) and `enabled`.
/// Static endpoints (`authorizationUrl`, `tokenUrl`) are left to
/// discovery, which the proxy always does; other keys are ignored.
fn read_oauth_block(value: &Value<'_>) -> Result<OAuthBlock, String> {
    let Value::Object(object) = value else {
        return Err("oauth is not an object".to_string());
    };
    let text = |name: &str| match get(object, name).map(|prop| &prop.value) {
        None => Ok(None),
        Some(Value::StringLit(text)) => Ok(Some(text.value.to_string())),
        Some(_) => Err(format!("oauth.{name} is not a string")),
    };
    let mut block = OAuthBlock {
        disabled: matches!(
            get(object, "enabled").map(|prop| &prop.value),
            Some(Value::BooleanLit(flag)) if !flag.value
        ),
        client_id: text("clientId")?,
        client_secret: text("clientSecret")?,
        ..OAuthBlock::default()
    };
    match get(object, "scopes").map(|prop| &prop.value) {
        None => {}
        Some(Value::Array(array)) => {
            for element in &array.elements {
                let Value::StringLit(scope) = element else {
                    return Err("oauth.scopes holds something other than strings".to_string());
                };
                block.scopes.push(scope.value.to_string());
            }
        }
        Some(_) => return Err("oauth.scopes is not a list".to_string()),
    }
    block.callback_port = match get(object, "callbackPort").map(|prop| &prop.value) {
        Some(Value::NumberLit(number)) => Some(
            number
                .value
                .parse()
                .map_err(|_| "oauth.callbackPort is not a port".to_string())?,
        ),
        Some(_) => return Err("oauth.callbackPort is not a number".to_string()),
        None => text("redirectUri")?.as_deref().and_then(loopback_port),
    };
    Ok(block)
}

/// Sorts out an entry: a stdio server to edit, or why it is left alone.
fn classify<'t, 'a>(
    value: &'t Value<'a>,
    dialect: Dialect,
    mut path: Vec<String>,
) -> Result<Found<'t, 'a>, (Action, String)> {
    let Value::Object(entry) = value else {
        return Err((Action::Skipped("not an object".into()), String::new()));
    };
    for key in ["url", "httpUrl", "serverUrl"] {
        if let Some(prop) = get(entry, key) {
            let Value::StringLit(url) = &prop.value else {
                return Err((Action::Remote, key.to_string()));
            };
            let type_prop =
                get(entry, "type").filter(|prop| matches!(prop.value, Value::StringLit(_)));
            return Ok(Found::Remote(RemoteTarget {
                object: entry,
                url_prop: prop,
                url: url.value.to_string(),
                type_prop,
                headers_prop: get(entry, "headers"),
                env_prop: get(entry, "env"),
                oauth_prop: get(entry, "oauth"),
                path,
            }));
        }
    }
    if let Some(prop) = get(entry, "type") {
        match &prop.value {
            Value::StringLit(kind) if kind.value == "stdio" => {}
            Value::StringLit(kind) => {
                return Err((Action::Remote, format!("type {}", kind.value)));
            }
            _ => {
                return Err((
                    Action::Skipped("`type` is not a string".into()),
                    String::new(),
                ));
            }
        }
    }
    let Some(command_prop) = get(entry, "command") else {
        return Err((Action::Skipped("no command".into()), String::new()));
    };
    let (object, command_key, command_prop) = match &command_prop.value {
        Value::StringLit(_) => (entry, "command", command_prop),
        // Older Zed: "command": { "path": …, "args": […], "env": {…} }.
        Value::Object(inner) if dialect == Dialect::Zed => {
            path.push("command".to_string());
            match get(inner, "path") {
                Some(prop) => (inner, "path", prop),
                None => return Err((Action::Skipped("no command path".into()), String::new())),
            }
        }
        _ => {
            return Err((
                Action::Skipped("command is not a string".into()),
                String::new(),
            ));
        }
    };
    let Value::StringLit(command) = &command_prop.value else {
        return Err((
            Action::Skipped("command path is not a string".into()),
            String::new(),
        ));
    };
    let command = command.value.to_string();
    let args_prop = get(object, "args");
    let (args_array, args) = match args_prop.map(|prop| &prop.value) {
        None => (None, Vec::new()),
        Some(Value::Array(array)) => {
            let mut args = Vec::with_capacity(array.elements.len());
            for element in &array.elements {
                match element {
                    Value::StringLit(word) => args.push(word.value.to_string()),
                    _ => {
                        return Err((
                            Action::Skipped("args holds something other than strings".into()),
                            command,
                        ));
                    }
                }
            }
            (Some(array), args)
        }
        Some(_) => {
            return Err((Action::Skipped("args is not a list".into()), command));
        }
    };
    Ok(Found::Stdio(Target {
        object,
        command_key,
        command_prop,
        command,
        args_prop,
        args_array,
        args,
        path,
    }))
}

/// The server maps of a file, each with its scope and its path from the
/// root.
fn sections<'t, 'a>(
    root: &'t Object<'a>,
    dialect: Dialect,
) -> impl Iterator<Item = (Option<String>, Vec<String>, &'t Object<'a>)> + 't {
    let top_key = match dialect {
        Dialect::McpServers => "mcpServers",
        Dialect::VsCode => "servers",
        Dialect::Zed => "context_servers",
    };
    let top = match get(root, top_key).map(|prop| &prop.value) {
        Some(Value::Object(map)) => Some((None, vec![top_key.to_string()], map)),
        _ => None,
    };
    let projects = match (dialect, get(root, "projects").map(|prop| &prop.value)) {
        (Dialect::McpServers, Some(Value::Object(projects))) => projects.properties.as_slice(),
        _ => &[],
    };
    let per_project = projects.iter().filter_map(|project| {
        let Value::Object(settings) = &project.value else {
            return None;
        };
        match get(settings, "mcpServers").map(|prop| &prop.value) {
            Some(Value::Object(map)) => {
                let name = project.name.as_str().to_string();
                Some((
                    Some(name.clone()),
                    vec!["projects".to_string(), name, "mcpServers".to_string()],
                    map,
                ))
            }
            _ => None,
        }
    });
    top.into_iter().chain(per_project)
}

/// The property named `key`; the last one if the name repeats, as a JSON
/// reader keeps the last.
fn get<'t, 'a>(object: &'t Object<'a>, key: &str) -> Option<&'t ObjectProp<'a>> {
    object
        .properties
        .iter()
        .rev()
        .find(|prop| prop.name.as_str() == key)
}

fn parse(body: &str) -> Result<Option<Value<'_>>, ParseError> {
    let options = ParseOptions {
        allow_missing_commas: false,
        ..ParseOptions::default()
    };
    jsonc_parser::parse_to_ast(body, &CollectOptions::default(), &options)
        .map(|result| result.value)
        .map_err(|error| ParseError {
            line: error.line_display(),
            column: error.column_display(),
            message: error.kind().to_string(),
        })
}

/// The byte order mark, if any, and the text after it.
fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(body) => (&text[..3], body),
        None => ("", text),
    }
}

/// A JSON string literal for `word`.
fn quote(word: &str) -> String {
    serde_json::to_string(word).expect("a string serialises")
}

/// What goes between two inserted elements of `array`, in the array's own
/// style: one element per line at the first element's indentation when the
/// first element is on a line of its own, else the separator between the
/// first two elements when that is a comma and spaces, else `, `.
fn element_separator(body: &str, newline: &str, array: &Array<'_>) -> String {
    let first = array.elements[0].range();
    if body[array.range.start + 1..first.start].contains('\n') {
        let indent = &body[line_start(body, first.start)..first.start];
        if is_blank(indent) {
            return format!(",{newline}{indent}");
        }
    } else if let Some(second) = array.elements.get(1) {
        let between = &body[first.end..second.range().start];
        if let Some(spaces) = between.strip_prefix(',')
            && is_blank(spaces)
        {
            return between.to_string();
        }
    }
    ", ".to_string()
}

/// The splices that add `property` (`"args": […]`) right after
/// `command_prop`: on a line of its own at the same indentation when the
/// command is on a line of its own (after any comment that ends that line),
/// else on the same line, `, "args": […]`.
fn insert_args_after(
    body: &str,
    newline: &str,
    command_prop: &ObjectProp<'_>,
    property: &str,
) -> Vec<Splice> {
    let value_end = command_prop.value.range().end;
    let line = line_start(body, command_prop.range.start);
    let indent = &body[line..command_prop.range.start];
    if is_blank(indent) {
        let after = skip_spaces(body, value_end);
        if body[after..].starts_with(',') {
            let end = skip_spaces(body, skip_line_comment(body, skip_spaces(body, after + 1)));
            if at_line_end(body, end) {
                return vec![Splice::insert(end, format!("{newline}{indent}{property},"))];
            }
        } else {
            let end = skip_spaces(body, skip_line_comment(body, after));
            if at_line_end(body, end) && body[skip_trivia(body, value_end)..].starts_with('}') {
                return vec![
                    Splice::insert(value_end, ","),
                    Splice::insert(end, format!("{newline}{indent}{property}")),
                ];
            }
        }
    }
    vec![Splice::insert(value_end, format!(", {property}"))]
}

/// The splices that remove `prop` from `object` with its comma: the whole
/// line when the property has a line to itself, else just the property and
/// one comma. The inverse of [`insert_args_after`].
fn remove_property(body: &str, object: &Object<'_>, prop: &ObjectProp<'_>) -> Vec<Splice> {
    remove_span(body, object, prop.range.start, prop.range.end)
}

/// [`remove_property`] for several properties of `object` at once: runs of
/// neighbours go as one, so that no two removals claim the same comma.
fn remove_properties(body: &str, object: &Object<'_>, props: &[&ObjectProp<'_>]) -> Vec<Splice> {
    let index = |prop: &ObjectProp<'_>| {
        object
            .properties
            .iter()
            .position(|other| other.range.start == prop.range.start)
            .expect("a property of the object")
    };
    let mut sorted: Vec<usize> = props.iter().map(|prop| index(prop)).collect();
    sorted.sort_unstable();
    let mut splices = Vec::new();
    let mut run = 0;
    while run < sorted.len() {
        let mut last = run;
        while last + 1 < sorted.len() && sorted[last + 1] == sorted[last] + 1 {
            last += 1;
        }
        let (first, end) = (
            &object.properties[sorted[run]],
            &object.properties[sorted[last]],
        );
        splices.extend(remove_span(body, object, first.range.start, end.range.end));
        run = last + 1;
    }
    splices
}

/// Removes the text `start..end` (whole properties of `object`) with the
/// comma that kept it apart, and its line when it had lines of its own.
fn remove_span(body: &str, object: &Object<'_>, start: usize, end: usize) -> Vec<Splice> {
    let own_line = is_blank(&body[line_start(body, start)..start]);
    let after = skip_trivia(body, end);
    if body[after..].starts_with(',') && !body[end..after].contains('\n') {
        let rest = skip_spaces(body, after + 1);
        if own_line && at_line_end(body, rest) {
            return vec![Splice::delete(
                line_start(body, start),
                next_line_start(body, rest),
            )];
        }
        return vec![Splice::delete(start, rest)];
    }
    let previous = object
        .properties
        .iter()
        .take_while(|other| other.range.start < start)
        .last();
    let Some(previous) = previous else {
        // The only property: nothing to keep apart from it.
        return vec![Splice::delete(start, end)];
    };
    let comma = skip_trivia(body, previous.range.end);
    debug_assert!(body[comma..].starts_with(','));
    let rest = skip_spaces(body, end);
    if own_line && at_line_end(body, rest) {
        vec![
            Splice::delete(comma, comma + 1),
            Splice::delete(line_start(body, start), next_line_start(body, rest)),
        ]
    } else {
        vec![Splice::delete(comma, end)]
    }
}

/// Applies non-overlapping splices.
fn apply(body: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|splice| (splice.start, splice.end));
    let mut out = String::with_capacity(body.len() + 256);
    let mut at = 0;
    for splice in &splices {
        assert!(splice.start >= at, "overlapping splices: {splices:?}");
        out.push_str(&body[at..splice.start]);
        out.push_str(&splice.text);
        at = splice.end;
    }
    out.push_str(&body[at..]);
    out
}

/// Parses the edited text and compares it, as data, with the original data
/// plus the intended changes.
fn check(before: &str, after: &str, changes: &[Change]) -> Result<(), EditError> {
    let parsed = |text: &str| -> Result<Json, EditError> {
        parse(text)
            .map(|value| value.as_ref().map_or(Json::Null, data))
            .map_err(|error| EditError::Check(format!("the edited file does not parse: {error}")))
    };
    let mut expected = parsed(before)?;
    for change in changes {
        let mut object = &mut expected;
        for key in &change.path {
            object = &mut object[key.as_str()];
        }
        let Some(map) = object.as_object_mut() else {
            return Err(EditError::Check(format!(
                "no object at {}",
                change.path.join(".")
            )));
        };
        for key in &change.remove {
            map.remove(key);
        }
        for (key, value) in &change.set {
            map.insert(key.clone(), value.clone());
        }
    }
    let actual = parsed(after)?;
    if actual != expected {
        return Err(EditError::Check(
            "the edited file does not hold what was intended".to_string(),
        ));
    }
    Ok(())
}

/// The data of a parsed value, for comparing two texts: numbers keep their
/// spelling (as a tagged string), a repeated key keeps its last value.
fn data(value: &Value<'_>) -> Json {
    match value {
        Value::StringLit(text) => Json::String(text.value.to_string()),
        Value::NumberLit(number) => Json::String(format!("\u{0}number {}", number.value)),
        Value::BooleanLit(flag) => Json::Bool(flag.value),
        Value::NullKeyword(_) => Json::Null,
        Value::Array(array) => Json::Array(array.elements.iter().map(data).collect()),
        Value::Object(object) => Json::Object(
            object
                .properties
                .iter()
                .map(|prop| (prop.name.as_str().to_string(), data(&prop.value)))
                .collect(),
        ),
    }
}

fn is_blank(text: &str) -> bool {
    text.bytes().all(|byte| byte == b' ' || byte == b'\t')
}

fn line_start(body: &str, at: usize) -> usize {
    body[..at].rfind('\n').map_or(0, |newline| newline + 1)
}

fn next_line_start(body: &str, at: usize) -> usize {
    body[at..]
        .find('\n')
        .map_or(body.len(), |newline| at + newline + 1)
}

fn at_line_end(body: &str, at: usize) -> bool {
    let rest = &body[at..];
    rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n")
}

fn skip_spaces(body: &str, at: usize) -> usize {
    at + body[at..]
        .bytes()
        .take_while(|byte| *byte == b' ' || *byte == b'\t')
        .count()
}

/// Past a comment that ends on this line (`// …`, or `/* … */` closed before
/// the line ends); `at` itself otherwise.
fn skip_line_comment(body: &str, at: usize) -> usize {
    let rest = &body[at..];
    let line_end = rest.find(['\r', '\n']).unwrap_or(rest.len());
    if rest.starts_with("//") {
        return at + line_end;
    }
    if rest.starts_with("/*")
        && let Some(close) = rest[2..].find("*/")
        && close + 4 <= line_end
    {
        return at + close + 4;
    }
    at
}

/// Past whitespace and comments.
fn skip_trivia(body: &str, mut at: usize) -> usize {
    loop {
        let rest = &body[at..];
        let trimmed = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        at += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            at += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if let Some(comment) = trimmed.strip_prefix("/*") {
            at += comment.find("*/").map_or(trimmed.len(), |close| close + 4);
        } else {
            return at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper() -> Wrapper {
        Wrapper {
            command: "/usr/local/bin/drainpipe".to_string(),
            launcher: Vec::new(),
            proxy_args: Vec::new(),
            remote: false,
        }
    }

    /// Wraps, checks that a second run changes nothing and that unwrapping
    /// gives back the input byte for byte, except for the servers that were
    /// behind drainpipe before (unwrapping cannot tell who put them there);
    /// returns the wrap.
    fn round_trip(text: &str, dialect: Dialect, wrapper: &Wrapper) -> Edit {
        let wrapped = wrap(text, dialect, wrapper).unwrap();
        let again = wrap(&wrapped.text, dialect, wrapper).unwrap();
        assert_eq!(
            again.text, wrapped.text,
            "a second install changed the file"
        );
        assert!(!again.changed());
        let unwrapped = unwrap(&wrapped.text, dialect, wrapper).unwrap();
        let before = unwrap(text, dialect, wrapper).unwrap();
        assert_eq!(
            unwrapped.text, before.text,
            "uninstall did not restore the input"
        );
        if !before.changed() {
            assert_eq!(unwrapped.text, text);
        }
        let twice = unwrap(&unwrapped.text, dialect, wrapper).unwrap();
        assert!(!twice.changed(), "a second uninstall found work");
        wrapped
    }

    fn actions(edit: &Edit) -> Vec<(String, Action)> {
        edit.servers
            .iter()
            .map(|server| (server.name.clone(), server.action.clone()))
            .collect()
    }

    const DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/projects"],
      "env": { "DEBUG": "1" },
      "cwd": "/Users/me"
    },
    "git": {
      "command": "uvx"
    },
    "linear": { "url": "https://mcp.linear.app/sse" },
    "guarded": {
      "command": "/opt/bin/drainpipe",
      "args": ["proxy", "--clip", "256KiB", "--", "node", "server.js"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;

    #[test]
    fn claude_desktop_servers_are_wrapped_in_place() {
        let edit = round_trip(DESKTOP, Dialect::McpServers, &wrapper());
        let expected = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/Users/me/projects"],
      "env": { "DEBUG": "1" },
      "cwd": "/Users/me"
    },
    "git": {
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--", "uvx"]
    },
    "linear": { "url": "https://mcp.linear.app/sse" },
    "guarded": {
      "command": "/opt/bin/drainpipe",
      "args": ["proxy", "--clip", "256KiB", "--", "node", "server.js"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#;
        assert_eq!(edit.text, expected);
        assert_eq!(
            actions(&edit),
            vec![
                ("filesystem".into(), Action::Wrapped),
                ("git".into(), Action::Wrapped),
                ("linear".into(), Action::Remote),
                ("guarded".into(), Action::AlreadyWrapped),
            ]
        );
        assert_eq!(
            edit.servers[0].detail,
            "npx -y @modelcontextprotocol/server-filesystem /Users/me/projects"
        );
        assert_eq!(edit.servers[2].detail, "https://mcp.linear.app/sse");
    }

    const COMMENTED: &str = "{
    // Servers for this project.
    \"mcpServers\": {
        \"multi\": {
            \"command\": \"uvx\", // the runner
            \"args\": [
                // the package
                \"mcp-server-git\",
                \"--repository\", \".\", // here
            ],
        },
        \"inline\": { \"command\": 'node', \"env\": {\"A\": \"b\"} },
        \"last\": {
            \"env\": {},
            \"command\": \"python3\" /* system python */
        },
        \"tight\": {\"command\":\"x\",\"args\":[\"a\",\"b\"]},
        unquoted: { command: \"z\", },
    },
}
";

    #[test]
    fn comments_trailing_commas_and_each_layout_survive() {
        let proxy = Wrapper {
            command: r"C:\Program Files\drainpipe\drainpipe.exe".to_string(),
            launcher: Vec::new(),
            proxy_args: vec!["--clip".into(), "256KiB".into()],
            remote: false,
        };
        let edit = round_trip(COMMENTED, Dialect::McpServers, &proxy);
        let expected = "{
    // Servers for this project.
    \"mcpServers\": {
        \"multi\": {
            \"command\": \"C:\\\\Program Files\\\\drainpipe\\\\drainpipe.exe\", // the runner
            \"args\": [
                // the package
                \"proxy\",
                \"--clip\",
                \"256KiB\",
                \"--\",
                \"uvx\",
                \"mcp-server-git\",
                \"--repository\", \".\", // here
            ],
        },
        \"inline\": { \"command\": \"C:\\\\Program Files\\\\drainpipe\\\\drainpipe.exe\", \"args\": [\"proxy\", \"--clip\", \"256KiB\", \"--\", 'node'], \"env\": {\"A\": \"b\"} },
        \"last\": {
            \"env\": {},
            \"command\": \"C:\\\\Program Files\\\\drainpipe\\\\drainpipe.exe\", /* system python */
            \"args\": [\"proxy\", \"--clip\", \"256KiB\", \"--\", \"python3\"]
        },
        \"tight\": {\"command\":\"C:\\\\Program Files\\\\drainpipe\\\\drainpipe.exe\",\"args\":[\"proxy\",\"--clip\",\"256KiB\",\"--\",\"x\",\"a\",\"b\"]},
        unquoted: { command: \"C:\\\\Program Files\\\\drainpipe\\\\drainpipe.exe\", \"args\": [\"proxy\", \"--clip\", \"256KiB\", \"--\", \"z\"], },
    },
}
";
        assert_eq!(edit.text, expected);
        assert!(edit.servers.iter().all(|s| s.action == Action::Wrapped));
    }

    #[test]
    fn vscode_wraps_stdio_entries_and_leaves_http_ones() {
        let text = r#"// VS Code MCP servers
{
	"inputs": [{ "type": "promptString", "id": "token", "password": true }],
	"servers": {
		"memory": {
			"type": "stdio",
			"command": "npx",
			"args": [
				"-y",
				"@modelcontextprotocol/server-memory"
			],
			"envFile": "${workspaceFolder}/.env",
		},
		"plain": { "command": "my-server" },
		"github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },
		"events": { "type": "sse", "url": "http://localhost:3000/sse" },
	},
}
"#;
        let edit = round_trip(text, Dialect::VsCode, &wrapper());
        assert!(edit.text.contains(
            "\t\t\t\"args\": [\n\t\t\t\t\"proxy\",\n\t\t\t\t\"--\",\n\t\t\t\t\"npx\",\n\t\t\t\t\"-y\",\n"
        ));
        assert!(edit.text.contains(
            r#""plain": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "my-server"] },"#
        ));
        assert_eq!(
            actions(&edit),
            vec![
                ("memory".into(), Action::Wrapped),
                ("plain".into(), Action::Wrapped),
                ("github".into(), Action::Remote),
                ("events".into(), Action::Remote),
            ]
        );
        // The same file read as another layout has no servers to touch.
        let other = wrap(text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(other.text, text);
        assert!(other.servers.is_empty());
    }

    #[test]
    fn zed_current_and_older_entries_are_both_wrapped() {
        let text = r#"// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "current": {
      "source": "custom",
      "command": "npx",
      "args": ["-y", "mcp-server-sqlite"],
      "env": {}
    },
    "older": {
      "command": {
        "path": "/usr/bin/python3",
        "args": ["-m", "my_server"],
        "env": { "PYTHONUNBUFFERED": "1" }
      },
      "settings": {}
    },
    "older-no-args": {
      "command": { "path": "uvx" }
    },
    "from-extension": { "source": "extension", "settings": {} },
    "remote": { "url": "https://example.com/mcp", "headers": {} }
  }
}
"#;
        let edit = round_trip(text, Dialect::Zed, &wrapper());
        assert!(edit.text.contains(
            r#""path": "/usr/local/bin/drainpipe",
        "args": ["proxy", "--", "/usr/bin/python3", "-m", "my_server"],"#
        ));
        assert!(edit.text.contains(
            r#""command": { "path": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "uvx"] }"#
        ));
        assert_eq!(
            actions(&edit),
            vec![
                ("current".into(), Action::Wrapped),
                ("older".into(), Action::Wrapped),
                ("older-no-args".into(), Action::Wrapped),
                (
                    "from-extension".into(),
                    Action::Skipped("no command".into())
                ),
                ("remote".into(), Action::Remote),
            ]
        );
    }

    #[test]
    fn claude_code_user_file_has_per_project_maps_too() {
        let text = r#"{
  "numStartups": 12,
  "mcpServers": {
    "user-level": { "type": "stdio", "command": "npx", "args": ["-y", "a"], "env": {} }
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "db": { "type": "stdio", "command": "node", "args": ["db.js"], "env": { "URL": "x" } },
        "docs": { "type": "http", "url": "https://docs.example/mcp" }
      }
    },
    "/home/me/empty": { "mcpServers": {} },
    "/home/me/none": { "allowedTools": [] }
  }
}
"#;
        let edit = round_trip(text, Dialect::McpServers, &wrapper());
        let scoped: Vec<_> = edit
            .servers
            .iter()
            .map(|s| (s.scope.as_deref(), s.name.as_str(), s.action.clone()))
            .collect();
        assert_eq!(
            scoped,
            vec![
                (None, "user-level", Action::Wrapped),
                (Some("/home/me/app"), "db", Action::Wrapped),
                (Some("/home/me/app"), "docs", Action::Remote),
            ]
        );
        assert!(edit.text.contains(
            r#""db": { "type": "stdio", "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "node", "db.js"], "env": { "URL": "x" } },"#
        ));
        assert_eq!(dialects_present(text).unwrap(), vec![Dialect::McpServers]);
    }

    #[test]
    fn crlf_line_endings_and_a_byte_order_mark_are_kept() {
        let text = "\u{feff}{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\"\r\n    },\r\n    \"b\": {\r\n      \"command\": \"y\",\r\n      \"env\": {}\r\n    }\r\n  }\r\n}\r\n";
        let edit = round_trip(text, Dialect::McpServers, &wrapper());
        assert!(edit.text.starts_with('\u{feff}'));
        assert!(
            !edit.text.replace("\r\n", "").contains('\n'),
            "{:?}",
            edit.text
        );
        assert!(edit.text.contains(
            "      \"command\": \"/usr/local/bin/drainpipe\",\r\n      \"args\": [\"proxy\", \"--\", \"x\"]\r\n    },"
        ));
        assert!(edit.text.contains(
            "      \"command\": \"/usr/local/bin/drainpipe\",\r\n      \"args\": [\"proxy\", \"--\", \"y\"],\r\n      \"env\": {}"
        ));
    }

    #[test]
    fn non_ascii_text_before_the_values_keeps_offsets_right() {
        let text = "{\n  // café ☕ «servers»\n  \"mcpServers\": { \"é\": { \"command\": \"naïve\", \"args\": [\"ü\"] } }\n}\n";
        let edit = round_trip(text, Dialect::McpServers, &wrapper());
        assert!(edit.text.contains(
            r#"{ "é": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "naïve", "ü"] } }"#
        ));
    }

    #[test]
    fn an_empty_argument_list_is_filled_and_comes_back_as_no_list() {
        let text = r#"{ "mcpServers": { "e": { "command": "y", "args": [] } } }"#;
        let edit = wrap(text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(
            edit.text,
            r#"{ "mcpServers": { "e": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "y"] } } }"#
        );
        // The semantic inverse cannot tell `[]` from no list: it drops the
        // list (the backup is what restores such a file byte for byte).
        let back = unwrap(&edit.text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(
            back.text,
            r#"{ "mcpServers": { "e": { "command": "y" } } }"#
        );
    }

    #[test]
    fn unwrapping_takes_off_any_proxy_options_and_keeps_the_rest() {
        let text = r#"{
  "mcpServers": {
    "by-hand": {
      "command": "drainpipe",
      "args": ["proxy", "--max-frame", "8MiB", "--", "npx", "-y", "pkg"],
      "env": { "A": "1" }
    },
    "no-separator": { "command": "drainpipe", "args": ["proxy", "npx"] },
    "plain": { "command": "npx" }
  }
}"#;
        let edit = unwrap(text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(
            edit.text,
            r#"{
  "mcpServers": {
    "by-hand": {
      "command": "npx",
      "args": ["-y", "pkg"],
      "env": { "A": "1" }
    },
    "no-separator": { "command": "drainpipe", "args": ["proxy", "npx"] },
    "plain": { "command": "npx" }
  }
}"#
        );
        assert_eq!(
            actions(&edit),
            vec![
                ("by-hand".into(), Action::Unwrapped),
                (
                    "no-separator".into(),
                    Action::Skipped(
                        "cannot unwrap: its arguments have no `--` before the server command"
                            .into()
                    )
                ),
                ("plain".into(), Action::NotWrapped),
            ]
        );
        assert_eq!(edit.servers[0].detail, "npx -y pkg");
    }

    #[test]
    fn entries_that_are_not_plain_commands_are_left_alone() {
        let text = r#"{ "mcpServers": {
  "string-args": { "command": "x", "args": "--flag" },
  "number-arg": { "command": "x", "args": ["--port", 80] },
  "no-command": { "env": {} },
  "odd-type": { "type": 3, "command": "x" },
  "not-an-object": "x",
  "object-command": { "command": { "path": "x" } }
} }"#;
        let edit = wrap(text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(edit.text, text);
        assert!(!edit.changed());
        assert!(
            edit.servers
                .iter()
                .all(|s| matches!(s.action, Action::Skipped(_))),
            "{:?}",
            edit.servers
        );
    }

    #[test]
    fn a_file_that_does_not_parse_names_line_and_column() {
        let text = "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\": { \"command\": \"y\" }\n  }\n}\n";
        let Err(EditError::Parse(error)) = wrap(text, Dialect::McpServers, &wrapper()) else {
            panic!("a missing comma parsed");
        };
        // Where the comma should have been: right after the first entry.
        assert_eq!((error.line, error.column), (3, 28), "{error}");
        assert_eq!(error.message, "Expected comma");
        let Err(EditError::Parse(error)) = wrap("{\"a\": [1, 2}", Dialect::VsCode, &wrapper())
        else {
            panic!("a bad bracket parsed");
        };
        assert_eq!(error.line, 1, "{error}");
        assert!(wrap("[1, 2]", Dialect::Zed, &wrapper()).is_err());
        // An empty file is no servers, not an error.
        let empty = wrap("", Dialect::Zed, &wrapper()).unwrap();
        assert_eq!(empty.text, "");
        assert!(empty.servers.is_empty());
    }

    #[test]
    fn the_layouts_a_file_holds_are_told_apart() {
        assert_eq!(
            dialects_present(r#"{"mcpServers": {}}"#).unwrap(),
            vec![Dialect::McpServers]
        );
        assert_eq!(
            dialects_present(r#"{"servers": {}, "inputs": []}"#).unwrap(),
            vec![Dialect::VsCode]
        );
        assert_eq!(
            dialects_present("// zed\n{\"context_servers\": {},}").unwrap(),
            vec![Dialect::Zed]
        );
        assert_eq!(
            dialects_present(r#"{"servers": {}, "mcpServers": {}}"#).unwrap(),
            vec![Dialect::McpServers, Dialect::VsCode]
        );
        assert!(dialects_present(r#"{"theme": "x"}"#).unwrap().is_empty());
        assert!(dialects_present("{").is_err());
    }

    fn remote_wrapper() -> Wrapper {
        Wrapper {
            command: "/usr/local/bin/drainpipe".to_string(),
            launcher: Vec::new(),
            proxy_args: vec!["--clip".into(), "8000".into()],
            remote: true,
        }
    }

    #[test]
    fn oauth_blocks_become_proxy_options_with_the_secret_out_of_the_arguments() {
        // Gemini CLI's block with a literal secret; Claude Code's with a
        // client id and a callback port; one that turns OAuth off.
        let text = r#"{
  "mcpServers": {
    "webex": {
      "url": "https://mcp.webex.example/mcp",
      "oauth": {
        "enabled": true,
        "clientId": "C0ffee",
        "clientSecret": "s3cret-value",
        "scopes": ["spark:mcp", "offline_access"]
      }
    },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "X-Team": "core" },
      "oauth": { "clientId": "Iv23li", "callbackPort": 33418 }
    },
    "plain": { "url": "https://p.example/mcp", "oauth": { "enabled": false } }
  }
}
"#;
        let edit = wrap(text, Dialect::McpServers, &remote_wrapper()).unwrap();
        let wrapped = r#"{
  "mcpServers": {
    "webex": {
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--clip", "8000", "--url", "https://mcp.webex.example/mcp", "--oauth-client-id", "C0ffee", "--oauth-client-secret", "${DRAINPIPE_OAUTH_CLIENT_SECRET}", "--oauth-scope", "spark:mcp offline_access"],
      "env": { "DRAINPIPE_OAUTH_CLIENT_SECRET": "s3cret-value" }
    },
    "github": {
      "type": "stdio",
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--clip", "8000", "--url", "https://api.githubcopilot.com/mcp/", "--header", "X-Team: core", "--oauth-client-id", "Iv23li", "--oauth-port", "33418"]
    },
    "plain": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--clip", "8000", "--url", "https://p.example/mcp", "--no-oauth"] }
  }
}
"#;
        assert_eq!(edit.text, wrapped);
        // The secret is in `env` only, never in the arguments.
        let args_line = edit.text.lines().find(|l| l.contains("C0ffee")).unwrap();
        assert!(!args_line.contains("s3cret-value"));
        // In place, the blocks come back (the backup restores the bytes).
        let back = unwrap(&edit.text, Dialect::McpServers, &remote_wrapper()).unwrap();
        assert!(
            back.text.contains(r#""oauth": {"clientId":"C0ffee","clientSecret":"s3cret-value","scopes":["spark:mcp","offline_access"]}"#),
            "{}",
            back.text
        );
        assert!(
            back.text
                .contains(r#""oauth": {"callbackPort":33418,"clientId":"Iv23li"}"#),
            "{}",
            back.text
        );
        assert!(
            back.text.contains(r#""oauth": {"enabled":false}"#),
            "{}",
            back.text
        );
        // An entry whose `env` already names the variable is left alone.
        let taken = r#"{ "mcpServers": { "x": { "url": "https://x.example/mcp", "env": { "DRAINPIPE_OAUTH_CLIENT_SECRET": "a" }, "oauth": { "clientSecret": "b" } } } }"#;
        let edit = wrap(taken, Dialect::McpServers, &remote_wrapper()).unwrap();
        assert_eq!(edit.text, taken);
    }

    #[test]
    fn remote_servers_become_proxy_url_entries_with_remote() {
        let text = r#"{
  "mcpServers": {
    "linear": { "url": "https://mcp.linear.app/sse" },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}", "X-Team": "core" }
    },
    "windsurf": {
      "serverUrl": "https://w.example/mcp",
      "headers": { "X-Key": "${env:W_KEY}" },
      "env": { "A": "1" }
    },
    "guarded": { "command": "drainpipe", "args": ["proxy", "--url", "https://x.example/mcp"] }
  }
}
"#;
        let edit = wrap(text, Dialect::McpServers, &remote_wrapper()).unwrap();
        let wrapped = r#"{
  "mcpServers": {
    "linear": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--clip", "8000", "--url", "https://mcp.linear.app/sse"] },
    "github": {
      "type": "stdio",
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--clip", "8000", "--url", "https://api.githubcopilot.com/mcp/", "--header", "Authorization: Bearer ${GITHUB_TOKEN}", "--header", "X-Team: core"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }
    },
    "windsurf": {
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--clip", "8000", "--url", "https://w.example/mcp", "--header", "X-Key: ${W_KEY}"],
      "env": { "W_KEY": "${env:W_KEY}", "A": "1" }
    },
    "guarded": { "command": "drainpipe", "args": ["proxy", "--url", "https://x.example/mcp"] }
  }
}
"#;
        assert_eq!(edit.text, wrapped);
        assert_eq!(
            actions(&edit),
            vec![
                ("linear".into(), Action::Wrapped),
                ("github".into(), Action::Wrapped),
                ("windsurf".into(), Action::Wrapped),
                ("guarded".into(), Action::AlreadyWrapped),
            ]
        );
        assert_eq!(edit.servers[0].detail, "https://mcp.linear.app/sse");
        // Not wrapped twice.
        let again = wrap(&edit.text, Dialect::McpServers, &remote_wrapper()).unwrap();
        assert_eq!(again.text, edit.text);
        assert!(!again.changed());
        // Without --remote they stay as they are.
        let left = wrap(text, Dialect::McpServers, &wrapper()).unwrap();
        assert_eq!(left.text, text);
        assert_eq!(left.servers[1].action, Action::Remote);
        // In place (the backup is what restores exact bytes), the URL and
        // the headers come back with the variables spelled as before; the
        // `env` entries stay.
        let back = unwrap(&edit.text, Dialect::McpServers, &remote_wrapper()).unwrap();
        assert_eq!(
            back.text,
            r#"{
  "mcpServers": {
    "linear": { "url": "https://mcp.linear.app/sse" },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}", "X-Team": "core" },
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }
    },
    "windsurf": {
      "url": "https://w.example/mcp",
      "headers": { "X-Key": "${env:W_KEY}" },
      "env": { "W_KEY": "${env:W_KEY}", "A": "1" }
    },
    "guarded": { "url": "https://x.example/mcp" }
  }
}
"#
        );
        assert!(back.servers.iter().all(|s| s.action == Action::Unwrapped));
        assert_eq!(back.servers[1].wrapper, Some(remote_wrapper()));
    }

    #[test]
    fn vscode_http_servers_are_wrapped_with_remote() {
        let text = r#"{
	"inputs": [{ "type": "promptString", "id": "token", "password": true }],
	"servers": {
		"github": {
			"type": "http",
			"url": "https://api.githubcopilot.com/mcp/",
			"headers": { "Authorization": "Bearer ${input:token}", "X-Key": "${env:GH_KEY}" },
		},
		"events": { "type": "sse", "url": "http://localhost:3000/sse" },
		"no-url": { "type": "http" },
		"odd": { "type": "http", "url": "https://o.example", "headers": { "N": 1 } },
	},
}
"#;
        let edit = wrap(text, Dialect::VsCode, &remote_wrapper()).unwrap();
        assert_eq!(
            edit.text,
            r#"{
	"inputs": [{ "type": "promptString", "id": "token", "password": true }],
	"servers": {
		"github": {
			"type": "stdio",
			"command": "/usr/local/bin/drainpipe",
			"args": ["proxy", "--clip", "8000", "--url", "https://api.githubcopilot.com/mcp/", "--header", "Authorization: Bearer ${input:token}", "--header", "X-Key: ${GH_KEY}"],
			"env": { "GH_KEY": "${env:GH_KEY}" },
		},
		"events": { "type": "stdio", "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--clip", "8000", "--url", "http://localhost:3000/sse"] },
		"no-url": { "type": "http" },
		"odd": { "type": "http", "url": "https://o.example", "headers": { "N": 1 } },
	},
}
"#
        );
        assert_eq!(
            actions(&edit),
            vec![
                ("github".into(), Action::Wrapped),
                ("events".into(), Action::Wrapped),
                ("no-url".into(), Action::Remote),
                (
                    "odd".into(),
                    Action::Skipped("headers hold something other than strings".into())
                ),
            ]
        );
        // Zed expands no variables in `env`: the proxy inherits Zed's.
        let zed = r#"{ "context_servers": { "r": { "url": "https://r.example", "headers": { "K": "${K}" } } } }"#;
        let edit = wrap(zed, Dialect::Zed, &remote_wrapper()).unwrap();
        assert_eq!(
            edit.text,
            r#"{ "context_servers": { "r": { "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--clip", "8000", "--url", "https://r.example", "--header", "K: ${K}"] } } }"#
        );
    }

    #[test]
    fn a_repeated_key_edits_the_one_a_host_reads() {
        let text = r#"{"mcpServers": {"a": {"command": "x", "command": "y"}}}"#;
        let edit = round_trip(text, Dialect::McpServers, &wrapper());
        assert_eq!(
            edit.text,
            r#"{"mcpServers": {"a": {"command": "x", "command": "/usr/local/bin/drainpipe", "args": ["proxy", "--", "y"]}}}"#
        );
    }
}
