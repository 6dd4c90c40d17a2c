//! `drainpipe check` as a process: passing on the fixture server, failing
//! with the right row on servers that misbehave.

mod cli_support;

use cli_support::*;

/// The check's arguments that exercise every row on the fixture.
fn check_fixture(large_tool: &str, fixture_flags: &[&str]) -> Finished {
    let mut args = vec![
        "check",
        "--large-tool",
        large_tool,
        "--large-args",
        r#"{"bytes": 8388608}"#,
        "--slow-tool",
        "slow",
        "--slow-args",
        r#"{"steps": 100, "step_ms": 20}"#,
        "--",
        FIXTURE,
    ];
    args.extend_from_slice(fixture_flags);
    run(&mut drainpipe(&args), b"", 60)
}

/// The verdict and figures of the row called `name`.
fn row<'a>(done: &'a Finished, name: &str) -> (&'a str, &'a str) {
    let line = done
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{}", done.stdout));
    let rest = line.trim_start()[name.len()..].trim_start();
    rest.split_once(' ').unwrap_or((rest, ""))
}

#[test]
fn a_well_behaved_server_passes_every_row() {
    let done = check_fixture("bounded", &[]);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    for name in [
        "handshake",
        "tools/list",
        "result over the limit",
        "cancellation",
        "stdout purity",
        "shutdown",
    ] {
        assert_eq!(row(&done, name).0, "pass", "{}", done.stdout);
    }
    assert!(
        row(&done, "result over the limit")
            .1
            .contains("marked truncated")
    );
    assert!(row(&done, "cancellation").1.contains("progress stopped"));
    assert!(row(&done, "shutdown").1.contains("no processes left"));
    assert!(done.stdout.contains("6 passed, 0 failed, 0 skipped"));
}

#[test]
fn rows_that_need_a_tool_are_skipped_without_one() {
    let done = run(&mut drainpipe(&["check", "--", FIXTURE]), b"", 60);
    assert_eq!(done.code(), 0, "{}", done.stdout);
    assert_eq!(row(&done, "result over the limit").0, "skip");
    assert_eq!(row(&done, "cancellation").0, "skip");
    assert!(done.stdout.contains("4 passed, 0 failed, 2 skipped"));
}

#[test]
fn an_unbounded_result_fails_its_row_only() {
    let done = check_fixture("large", &[]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    let (verdict, measured) = row(&done, "result over the limit");
    assert_eq!(verdict, "FAIL");
    assert!(
        measured.contains("passed the 4 MiB transport limit"),
        "{measured}"
    );
    assert!(
        measured.contains("next request in"),
        "the session recovered: {measured}"
    );
    assert!(
        done.stdout.contains("5 passed, 1 failed"),
        "{}",
        done.stdout
    );
}

#[test]
fn stray_stdout_fails_purity() {
    let done = check_fixture("bounded", &["--stray-stdout"]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    let (verdict, measured) = row(&done, "stdout purity");
    assert_eq!(verdict, "FAIL");
    assert!(measured.contains("stray lines 1"), "{measured}");
    assert!(
        done.stdout.contains("5 passed, 1 failed"),
        "{}",
        done.stdout
    );
}

#[test]
fn ignored_cancellation_fails_its_row() {
    let done = check_fixture("bounded", &["--ignore-cancel"]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    let (verdict, measured) = row(&done, "cancellation");
    assert_eq!(verdict, "FAIL");
    assert!(measured.contains("the work went on"), "{measured}");
}

#[test]
fn a_server_that_outlives_its_stdin_fails_shutdown() {
    let done = check_fixture("bounded", &["--linger"]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    let (verdict, measured) = row(&done, "shutdown");
    assert_eq!(verdict, "FAIL");
    assert!(measured.contains("SIGTERM ended it"), "{measured}");
    assert!(
        done.stdout.contains("5 passed, 1 failed"),
        "{}",
        done.stdout
    );
}

#[test]
fn a_server_that_cannot_start_is_an_environment_error() {
    let done = run(
        &mut drainpipe(&["check", "--", "/nonexistent/server"]),
        b"",
        20,
    );
    assert_eq!(done.code(), 3, "{}", done.stderr);
    assert!(done.stderr.contains("could not start"), "{}", done.stderr);
}
