//! `drainpipe serve`: a stdio server served over Streamable HTTP, one child
//! per session, on real processes and sockets. Each test starts `serve` in
//! front of the fixture server, speaks HTTP/1.1 to it over TCP
//! (`drainpipe_release::http1`), and looks at the process table for the
//! children it must leave behind (none).

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drainpipe_release::http1::Request;
use drainpipe_release::served::{Serve, answer_of, call, initialize, wait_gone};
use drainpipe_release::{drainpipe_binary, fixture_binary, procs};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// A session answers tools/list and tools/call (progress on the call's own
/// stream), with the same bytes a stdio client gets; DELETE ends the
/// session and its child, and the session is gone after.
#[test]
fn a_session_works_and_delete_ends_its_child() {
    let serve = Serve::start(&[], &[]);
    let session = serve.initialize();
    serve.wait_children(1, 10);

    let listed = Request::post(
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .with("accept", "application/json")
    .with("mcp-session-id", session.clone())
    .send(serve.addr);
    assert_eq!(listed.status, 200);
    assert_eq!(listed.header("content-type"), Some("application/json"));
    assert!(
        listed.json()["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );

    let mut slow = call(3, "slow", json!({"steps": 3, "step_ms": 20}));
    // (The fixture names its progress by the request id.)
    slow["params"]["_meta"] = json!({"progressToken": 3});
    let reply = serve.post(Some(&session), &slow);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = drainpipe_release::http1::parse_events(&reply.body);
    assert!(
        events[0].data.is_empty() && events[0].id.is_some() && events[0].retry.is_some(),
        "a POST stream starts with a priming event: {events:?}"
    );
    let messages = reply.events();
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(
        progress, 3,
        "every progress notification on the call's stream: {messages:?}"
    );
    let last = messages.last().expect("an answer");
    assert_eq!(last["id"], 3);
    assert!(last["result"].is_object(), "{last}");

    let deleted = Request::delete("/mcp")
        .with("mcp-session-id", session.clone())
        .send(serve.addr);
    assert_eq!(deleted.status, 200);
    serve.wait_children(0, 15);
    let after = serve.post(Some(&session), &call(4, "slow", json!({"steps": 1})));
    assert_eq!(after.status, 404, "a deleted session is gone");
    assert_eq!(after.json()["id"], 4, "the error answers the request's id");
}

/// DNS rebinding: a Host or an Origin that is not loopback's is refused
/// before anything is read; the token is required, compared, and never
/// printed; /healthz answers a load balancer without either.
#[test]
fn the_guard_refuses_rebinding_and_wrong_tokens() {
    let token = "tok-9f1c2e7a-do-not-log";
    let serve = Serve::start_with(
        &["--token", "${SERVE_TEST_TOKEN}"],
        &[],
        &[("SERVE_TEST_TOKEN", token)],
    );
    let init = initialize(1);
    let bearer = format!("Bearer {token}");

    let rebinding = Request::post("/mcp", &init)
        .with("host", "evil.example.com")
        .with("authorization", bearer.clone())
        .send(serve.addr);
    assert_eq!(rebinding.status, 403);
    let origin = Request::post("/mcp", &init)
        .with("origin", "http://evil.example.com")
        .with("authorization", bearer.clone())
        .send(serve.addr);
    assert_eq!(origin.status, 403);
    let anonymous = Request::post("/mcp", &init).send(serve.addr);
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));
    let wrong = Request::post("/mcp", &init)
        .with("authorization", format!("Bearer {token}x"))
        .send(serve.addr);
    assert_eq!(wrong.status, 401);
    assert!(
        serve.children().is_empty(),
        "no refused request started a child"
    );

    let from_loopback = Request::post("/mcp", &init)
        .with("origin", "http://localhost:6274")
        .with("authorization", bearer)
        .send(serve.addr);
    assert_eq!(from_loopback.status, 200);
    assert!(from_loopback.header("mcp-session-id").is_some());

    let health = Request::get("/healthz")
        .with("host", "10.0.0.7")
        .send(serve.addr);
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    assert!(
        !serve.stderr().contains(token),
        "the token reached the log:\n{}",
        serve.stderr()
    );
}

/// Beyond loopback serve refuses to start without a token, and says so
/// out loud when told to serve without one.
#[test]
fn beyond_loopback_a_token_or_auth_none_is_required() {
    let refused = Command::new(drainpipe_binary())
        .args(["serve", "--listen", "0.0.0.0:0", "--"])
        .arg(fixture_binary())
        .stdin(Stdio::null())
        .output()
        .expect("run serve");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--token"));

    let mut open = Command::new(drainpipe_binary())
        .args(["serve", "--listen", "0.0.0.0:0", "--auth", "none", "--"])
        .arg(fixture_binary())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run serve");
    let mut stderr = BufReader::new(open.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a line");
    let _ = open.kill();
    let _ = open.wait();
    assert!(
        first.contains("WARNING") && first.contains("no token"),
        "{first}"
    );
}

/// A body over the transport limit is refused with 413 before it is read
/// whole (declared or not), and the session goes on.
#[test]
fn a_body_over_the_limit_is_refused_and_the_session_lives() {
    let serve = Serve::start(&["--max-frame", "64KiB"], &[]);
    let session = serve.initialize();
    let big = call(2, "slow", json!({"padding": "x".repeat(200 << 10)}));
    let refused = serve.post(Some(&session), &big);
    assert_eq!(refused.status, 413);
    assert_eq!(
        refused.json()["error"]["code"],
        drainpipe_host::proxy::TOO_LARGE
    );
    let answered = serve.post(Some(&session), &call(3, "slow", json!({"steps": 1})));
    assert_eq!(answered.status, 200);
    assert_eq!(answered.events().last().unwrap()["id"], 3);
}

/// A client that goes away mid-call has its request cancelled to the
/// child (after the resume window), and the session answers the next one.
#[test]
fn a_client_that_goes_away_has_its_request_cancelled() {
    let serve = Serve::start(&["--resume-window", "0s"], &[]);
    let session = serve.initialize();
    let mut open = Request::post(
        "/mcp",
        &call(7, "slow", json!({"steps": 200, "step_ms": 50})),
    )
    .with("mcp-session-id", session.clone())
    .open(serve.addr);
    assert_eq!(open.status, 200);
    let priming = open.next_event().expect("the priming event");
    assert!(priming.id.is_some());
    drop(open);
    serve.wait_stderr("fixture: cancel for id 7: stopped", 20);
    let next = serve.post(Some(&session), &call(8, "slow", json!({"steps": 1})));
    assert_eq!(next.events().last().unwrap()["id"], 8);
}

/// A client whose POST stream broke resumes it with Last-Event-ID: it gets
/// what it missed and the answer, and nothing is cancelled.
#[test]
fn a_broken_stream_is_resumed_with_last_event_id() {
    let serve = Serve::start(&["--resume-window", "30s"], &[]);
    let session = serve.initialize();
    let mut body = call(5, "slow", json!({"steps": 10, "step_ms": 100}));
    body["params"]["_meta"] = json!({"progressToken": 5});
    let mut open = Request::post("/mcp", &body)
        .with("mcp-session-id", session.clone())
        .open(serve.addr);
    let priming = open.next_event().expect("the priming event");
    let last = priming.id.clone().expect("an id");
    drop(open);
    std::thread::sleep(Duration::from_millis(300));
    let resumed = Request::get("/mcp")
        .with("mcp-session-id", session.clone())
        .with("last-event-id", last)
        .send(serve.addr);
    assert_eq!(resumed.status, 200);
    let messages = resumed.events();
    assert_eq!(
        messages.last().expect("the answer")["id"],
        5,
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == "notifications/progress"),
        "the progress sent while disconnected is replayed: {messages:?}"
    );
    assert!(
        !serve.stderr().contains("fixture: cancel"),
        "{}",
        serve.stderr()
    );
}

/// A session nobody uses ends with its child after --session-idle.
#[test]
fn an_idle_session_ends_with_its_child() {
    let serve = Serve::start(&["--session-idle", "1s"], &[]);
    let session = serve.initialize();
    serve.wait_children(1, 10);
    serve.wait_children(0, 15);
    let after = serve.post(Some(&session), &call(2, "slow", json!({"steps": 1})));
    assert_eq!(after.status, 404);
    serve.initialize();
}

/// Past --max-sessions, initialize gets 503 and Retry-After; a session
/// ended makes room.
#[test]
fn sessions_past_the_limit_are_refused_with_503() {
    let serve = Serve::start(&["--max-sessions", "2"], &[]);
    let first = serve.initialize();
    serve.initialize();
    let third = serve.post(None, &initialize(1));
    assert_eq!(third.status, 503);
    assert_eq!(third.header("retry-after"), Some("5"));
    Request::delete("/mcp")
        .with("mcp-session-id", first)
        .send(serve.addr);
    // The ended session counts until its child is reaped: room comes then.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let again = serve.post(None, &initialize(1));
        if again.status == 200 {
            break;
        }
        assert_eq!(again.status, 503);
        assert!(Instant::now() < deadline, "no room after a session ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child that dies fails what waits on it with an error, its session
/// ends, and a new initialize works.
#[test]
fn a_child_that_exits_fails_its_requests_and_ends_its_session() {
    let serve = Serve::start(&[], &[]);
    let session = serve.initialize();
    serve.wait_children(1, 10);
    let mut open = Request::post(
        "/mcp",
        &call(4, "slow", json!({"steps": 400, "step_ms": 50})),
    )
    .with("mcp-session-id", session.clone())
    .open(serve.addr);
    open.next_event().expect("the priming event");
    for pid in serve.children() {
        procs::signal(pid, Signal::SIGKILL);
    }
    let answer = answer_of(&mut open);
    assert_eq!(answer["id"], 4);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended")),
        "{answer}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let after = serve.post(Some(&session), &call(5, "slow", json!({"steps": 1})));
        if after.status == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the session outlived its child");
        std::thread::sleep(Duration::from_millis(50));
    }
    serve.initialize();
}

/// A request with no session and no initialize (a 2026-07-28 client) is
/// served by a child of its own, which ends with it.
#[test]
fn a_stateless_request_gets_a_child_that_ends_with_it() {
    let serve = Serve::start(&[], &[]);
    let reply = Request::post(
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    )
    .with("accept", "application/json")
    .send(serve.addr);
    assert_eq!(reply.status, 200);
    assert!(reply.header("mcp-session-id").is_none());
    assert_eq!(reply.json()["id"], 9);
    serve.wait_children(0, 15);
}

/// A client that stops reading its stream loses only its own answers:
/// another session keeps answering while it does not read; what did not
/// fit in the stuck stream's queue is the `unread` error (-31005) for that
/// request, said in its place; the session then works.
#[test]
fn a_client_that_does_not_read_harms_no_other_session() {
    let serve = Serve::start(&["--max-frame", "32MiB", "--stream-queue", "64KiB"], &[]);
    let stuck = serve.initialize();
    let other = serve.initialize();
    // Three answers of 24 MiB the stuck client does not read, in whatever
    // order the fixture writes them: the first fills every socket buffer
    // on the way, the next waits in the stream's queue, and the one after
    // finds the queue full.
    let batch = json!([
        call(2, "large", json!({"bytes": 24 << 20})),
        call(3, "large", json!({"bytes": 24 << 20})),
        call(4, "large", json!({"bytes": 24 << 20})),
    ]);
    let mut open = Request::post("/mcp", &batch)
        .with("mcp-session-id", stuck.clone())
        .open(serve.addr);
    std::thread::sleep(Duration::from_millis(500));
    for id in 10..30 {
        let started = Instant::now();
        let reply = serve.post(Some(&other), &call(id, "slow", json!({"steps": 1})));
        assert_eq!(reply.events().last().unwrap()["id"], id);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the other session stalled"
        );
    }
    let body = open.read_to_end();
    let answers: Vec<Value> = drainpipe_release::http1::parse_events(&body)
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| serde_json::from_str(&e.data).expect("JSON data"))
        .collect();
    let mut ids: Vec<u64> = answers.iter().filter_map(|a| a["id"].as_u64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 3, 4], "one answer for each request");
    assert!(
        answers[0]["result"].is_object(),
        "the first answer is delivered: {}",
        answers[0]["error"]
    );
    let last = answers.last().expect("answers");
    assert_eq!(
        last["error"]["code"], -31005,
        "what did not fit is said to be unread: {}",
        last["error"]
    );
    let after = serve.post(Some(&stuck), &call(5, "slow", json!({"steps": 1})));
    assert_eq!(after.events().last().unwrap()["id"], 5, "the session works");
}

/// A server that writes the id after a large result (as some SDKs order
/// members) is answered on the right stream through serve.
#[test]
fn an_answer_with_its_id_last_reaches_its_request() {
    let serve = Serve::start(&["--max-frame", "8MiB"], &[]);
    let session = serve.initialize();
    for (id, bytes) in [(2, 1 << 20), (3, 300), (4, 5 << 20)] {
        let reply = serve.post(
            Some(&session),
            &call(id, "sized", json!({"bytes": bytes, "id_last": true})),
        );
        let answers = reply.events();
        let answer = answers.last().expect("an answer");
        assert_eq!(answer["id"], id);
        assert!(answer["result"].is_object(), "{}", answer["error"]);
    }
}

/// `--shared`: every session on one child. Two clients using the same
/// request ids and progress tokens each get their own answers and
/// progress; `initialize` is answered from the child's first answer; one
/// client's cancellation and DELETE touch no other; when the child exits
/// every session ends and the next `initialize` starts a new child.
#[test]
fn shared_sessions_share_one_child_and_never_collide() {
    let serve = Serve::start(&["--shared"], &[]);
    let first = serve.post(None, &initialize(1));
    let second = serve.post(None, &initialize(1));
    let (a, b) = (
        first
            .header("mcp-session-id")
            .expect("a session")
            .to_string(),
        second
            .header("mcp-session-id")
            .expect("a session")
            .to_string(),
    );
    assert_ne!(a, b);
    assert_eq!(
        first.events()[0]["result"],
        second.events()[0]["result"],
        "the second initialize is answered from the first"
    );
    assert_eq!(second.events()[0]["id"], 1);
    for session in [&a, &b] {
        let notified = serve.post(
            Some(session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(notified.status, 202);
    }
    serve.wait_children(1, 10);

    // The same id and progress token in both sessions, at once.
    let mut opened = Vec::new();
    for (session, steps) in [(&a, 3), (&b, 5)] {
        let mut slow = call(3, "slow", json!({"steps": steps, "step_ms": 40}));
        slow["params"]["_meta"] = json!({"progressToken": 3});
        let open = Request::post("/mcp", &slow)
            .with("mcp-session-id", session.clone())
            .open(serve.addr);
        opened.push((open, steps));
    }
    for (mut open, steps) in opened {
        let mut progress = 0;
        loop {
            let message = open.next_message().expect("the answer");
            if message["method"] == "notifications/progress" {
                assert_eq!(message["params"]["progressToken"], 3, "{message}");
                assert_eq!(
                    message["params"]["total"], steps,
                    "another's progress: {message}"
                );
                progress += 1;
                continue;
            }
            assert_eq!(message["id"], 3);
            assert!(message["result"]["content"].is_array(), "{message}");
            break;
        }
        assert_eq!(progress, steps);
    }
    assert_eq!(serve.children().len(), 1, "one child for every session");

    // One client cancels its request 7; the other's request 7 goes on.
    let long = |steps| call(7, "slow", json!({"steps": steps, "step_ms": 50}));
    let mut cancelled = Request::post("/mcp", &long(400))
        .with("mcp-session-id", a.clone())
        .open(serve.addr);
    cancelled.next_event().expect("the priming event");
    let mut kept = Request::post("/mcp", &long(10))
        .with("mcp-session-id", b.clone())
        .open(serve.addr);
    kept.next_event().expect("the priming event");
    let cancel = serve.post(
        Some(&a),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}),
    );
    assert_eq!(cancel.status, 202);
    serve.wait_stderr("fixture: cancel for id", 10);
    let answer = answer_of(&mut kept);
    assert_eq!(answer["id"], 7);
    assert!(answer["result"].is_object(), "{answer}");
    assert!(
        cancelled.next_message().is_none(),
        "a cancelled request is not answered"
    );

    // A session that leaves leaves the child to the others.
    let deleted = Request::delete("/mcp")
        .with("mcp-session-id", a.clone())
        .send(serve.addr);
    assert_eq!(deleted.status, 200);
    let reply = serve.post(Some(&b), &call(9, "slow", json!({"steps": 1})));
    assert_eq!(reply.events().last().unwrap()["id"], 9);
    assert_eq!(serve.children().len(), 1);
    assert_eq!(
        serve
            .post(Some(&a), &call(10, "slow", json!({"steps": 1})))
            .status,
        404
    );

    // The child exits: every session ends, the next initialize starts one.
    let mut waiting = Request::post("/mcp", &long(400))
        .with("mcp-session-id", b.clone())
        .open(serve.addr);
    waiting.next_event().expect("the priming event");
    let old = serve.children();
    for &pid in &old {
        procs::signal(pid, Signal::SIGKILL);
    }
    let answer = answer_of(&mut waiting);
    assert_eq!(answer["id"], 7);
    assert!(answer["error"].is_object(), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while serve
        .post(Some(&b), &call(11, "slow", json!({"steps": 1})))
        .status
        != 404
    {
        assert!(Instant::now() < deadline, "the session outlived the child");
        std::thread::sleep(Duration::from_millis(50));
    }
    serve.initialize();
    serve.wait_children(1, 10);
    assert!(serve.children().iter().all(|pid| !old.contains(pid)));
}

/// SIGTERM: no new session, open requests get their answers (--drain),
/// then every child ends and serve exits 0.
#[test]
fn sigterm_drains_then_ends_every_child() {
    let mut serve = Serve::start(&["--drain", "20s"], &[]);
    let busy = serve.initialize();
    serve.initialize();
    serve.wait_children(2, 10);
    let mut open = Request::post(
        "/mcp",
        &call(3, "slow", json!({"steps": 10, "step_ms": 100})),
    )
    .with("mcp-session-id", busy)
    .open(serve.addr);
    open.next_event().expect("the priming event");
    let children = serve.children();
    procs::signal(serve.child.id(), Signal::SIGTERM);
    let answer = answer_of(&mut open);
    assert_eq!(answer["id"], 3);
    assert!(
        answer["result"].is_object(),
        "the call in flight completes: {answer}"
    );
    assert_eq!(serve.wait_exit(30), Some(0));
    // (Found before the signal: gone, they are no longer serve's.)
    wait_gone(&children, 10);
}

/// SIGKILL to serve: its orphan guard ends every child it started.
#[test]
fn sigkill_leaves_no_child() {
    let mut serve = Serve::start(&[], &[]);
    for _ in 0..3 {
        serve.initialize();
    }
    serve.wait_children(3, 10);
    let children = serve.children();
    procs::signal(serve.child.id(), Signal::SIGKILL);
    let _ = serve.child.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while children
        .iter()
        .any(|&pid| procs::stat(pid).is_some_and(|s| s.state != 'Z'))
    {
        assert!(
            Instant::now() < deadline,
            "children outlived a SIGKILLed serve: {children:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// HTTPS with --tls-cert/--tls-key (HTTP/2 offered): drainpipe's own
/// remote client, trusting a private root, calls through it end to end.
#[test]
fn https_serves_a_session_end_to_end() {
    let Some(root) = drainpipe_release::tls::private_root("serve") else {
        return;
    };
    let serve = Serve::start(&["--tls-cert", &root.cert, "--tls-key", &root.key], &[]);
    assert!(
        serve.stderr().contains("listening on https://"),
        "{}",
        serve.stderr()
    );
    let url = format!("https://localhost:{}/mcp", serve.addr.port());
    let mut proxy = Command::new(drainpipe_binary())
        .args(["proxy", "--no-oauth", "--metrics", "none", "--url", &url])
        .env("SSL_CERT_FILE", &root.ca)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start proxy --url");
    let mut stdin = proxy.stdin.take().expect("stdin");
    let stdout = BufReader::new(proxy.stdout.take().expect("stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut answer = |message: Value| -> Value {
        use std::io::Write;
        writeln!(stdin, "{message}").expect("write to the proxy");
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer through serve over HTTPS");
        serde_json::from_str(&line).expect("JSON")
    };
    let init = answer(initialize(1));
    assert_eq!(
        init["result"]["serverInfo"]["name"], "drainpipe-fixture",
        "{init}"
    );
    let called = answer(call(2, "slow", json!({"steps": 1})));
    assert!(called["result"].is_object(), "{called}");
    let _ = proxy.kill();
    let _ = proxy.wait();
    // Plain HTTP on the TLS port is no request at all.
    let stream = std::net::TcpStream::connect(serve.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut plain = stream.try_clone().expect("clone");
    use std::io::{Read, Write};
    let _ = plain.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n");
    let mut reply = Vec::new();
    let _ = (&stream).read_to_end(&mut reply);
    assert!(
        !String::from_utf8_lossy(&reply).contains("\"ok\""),
        "plain HTTP was served"
    );
}

/// The 2024-11-05 HTTP+SSE transport for older clients: GET /sse opens a
/// session whose first event names where to POST; answers come on the
/// stream; the session and its child end with the stream.
#[test]
fn old_clients_get_the_http_sse_transport() {
    let serve = Serve::start(&[], &[]);
    let mut stream = Request::get("/sse").open(serve.addr);
    assert_eq!(stream.status, 200);
    let endpoint = stream.next_event().expect("the endpoint event").data;
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");
    let accepted = Request::post(&endpoint, &initialize(1)).send(serve.addr);
    assert_eq!(accepted.status, 202);
    let init = stream
        .next_message()
        .expect("initialize answered on the stream");
    assert_eq!(init["result"]["serverInfo"]["name"], "drainpipe-fixture");
    let called = Request::post(&endpoint, &call(2, "slow", json!({"steps": 1}))).send(serve.addr);
    assert_eq!(called.status, 202);
    assert_eq!(answer_of(&mut stream)["id"], 2);
    serve.wait_children(1, 10);
    drop(stream);
    serve.wait_children(0, 15);
    let after = Request::post(&endpoint, &call(3, "slow", json!({"steps": 1}))).send(serve.addr);
    assert_eq!(after.status, 404, "the session ended with its stream");
}

/// --pool keeps children started for stateless requests: each request
/// takes one (and it ends with the request), the pool is topped up, and
/// the pool's children end when serve stops.
#[test]
fn a_warm_pool_serves_stateless_requests() {
    let serve = Serve::start(&["--pool", "2"], &[]);
    serve.wait_children(2, 15);
    let before = serve.children();
    for id in 1..=3 {
        let reply = Request::post(
            "/mcp",
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        )
        .with("accept", "application/json")
        .send(serve.addr);
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["id"], id);
    }
    serve.wait_children(2, 15);
    let after = serve.children();
    assert!(
        before.iter().all(|pid| !after.contains(pid)),
        "each request took a warm child, which ended with it: {before:?} then {after:?}"
    );
    serve.stop(30);
}

/// A Python SDK client stopped (SIGSTOP) mid-answer: the child works on
/// to the end, another session keeps answering, and once the client runs
/// again (SIGCONT) its request ends (its answer, or the `unread` error when
/// the answer found no room: the kernel's socket buffers, up to tens of
/// MB on loopback, decide which) and its session answers the next one.
#[test]
fn a_stopped_client_loses_only_its_own_answer() {
    use drainpipe_release::peers;
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let serve = Serve::start(&["--stream-queue", "64KiB"], &[]);
    let other = serve.initialize();
    let url = format!("http://{}/mcp", serve.addr);
    let mut client = python
        .script("stopped_client.py", &[&url])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the Python client");
    let stdout = BufReader::new(client.stdout.take().expect("stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = |what: &str| -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("the Python client never said {what}"));
        serde_json::from_str(&line).expect("a JSON line")
    };
    assert_eq!(line("it was calling")["step"], "calling");
    std::thread::sleep(Duration::from_millis(100));
    procs::signal(client.id(), Signal::SIGSTOP);
    // The child finishes its work while its client is stopped...
    serve.wait_stderr("finished 3000 steps", 120);
    // ... and another session is not held up by the stopped one.
    for id in 10..20 {
        let started = Instant::now();
        let reply = serve.post(Some(&other), &call(id, "slow", json!({"steps": 1})));
        assert_eq!(reply.events().last().unwrap()["id"], id);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the other session stalled"
        );
    }
    procs::signal(client.id(), Signal::SIGCONT);
    let outcome = line("how its call ended");
    assert!(
        outcome["call"] == "answered"
            || (outcome["call"] == "error" && outcome["code"] == drainpipe_host::proxy::UNREAD),
        "{outcome}"
    );
    let second = line("how the next call ended");
    assert_eq!(second["second"], "answered", "{second}");
    let status = client.wait().expect("the client ends");
    assert!(status.success(), "the Python client failed: {status}");
}
