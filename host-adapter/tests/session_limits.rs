//! The transport limit and what the session does with every kind of bad line.

mod session_support;

use drainpipe_framer::Config;
use drainpipe_framer::budget::Clip;
use drainpipe_host::session::{CallError, OversizePolicy, SessionConfig};
use serde_json::json;
use session_support::*;

const LIMIT: u64 = 64 << 10;

fn limited() -> SessionConfig {
    SessionConfig {
        framer: Config::default().with_max_frame_bytes(LIMIT as usize),
        ..SessionConfig::default()
    }
}

/// The id comes first: the request fails the moment the limit is crossed,
/// while the server is still writing, with the byte counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_with_peekable_id_fails_that_request_at_once() {
    let session = start(&[], limited()).await;
    // 4 MiB in 256 pieces, 4 ms apart: about a second of writing.
    let pending = start_tool(
        &session,
        "large",
        json!({"bytes": 4 << 20, "piece_delay_ms": 4}),
        opts(20),
    )
    .await;
    let id = pending.id();
    let outcome = within(10, "too-large outcome", pending.outcome()).await;
    match outcome {
        Err(CallError::TooLarge {
            received_bytes,
            limit_bytes,
        }) => {
            assert_eq!(limit_bytes, LIMIT);
            assert!(received_bytes > LIMIT);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let done = format!("large id={id}: wrote");
    assert!(
        !session.stderr().kept_text().contains(&done),
        "failed before the server finished writing"
    );
    // The rest of the line is discarded; the next request is framed normally.
    assert_usable(&session).await;
    let metrics = session.metrics();
    assert_eq!(metrics.oversize_frames, 1);
    assert_eq!(metrics.late_responses_dropped, 0);
    assert!(
        metrics.stdout_bytes > 4 << 20,
        "the whole line was drained: {metrics:?}"
    );
    shutdown_clean(&session).await;
}

/// The id comes after the limit (as the TypeScript SDK writes it) while
/// this is the only request pending: the line is shaped as a response, so
/// it can only be this one's, and the request fails the moment the limit is
/// crossed, while the server is still writing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_with_the_id_last_fails_the_only_pending_request_at_the_limit() {
    let session = start(&[], limited()).await;
    // 4 MiB in 256 pieces, 4 ms apart: about a second of writing.
    let pending = start_tool(
        &session,
        "sized",
        json!({"bytes": 4 << 20, "id_last": true, "piece_delay_ms": 4}),
        opts(20),
    )
    .await;
    let id = pending.id();
    let outcome = within(10, "too-large outcome", pending.outcome()).await;
    assert!(
        matches!(
            outcome,
            Err(CallError::TooLarge {
                limit_bytes: LIMIT,
                ..
            })
        ),
        "{outcome:?}"
    );
    assert!(
        !session
            .stderr()
            .kept_text()
            .contains(&format!("sized id={id}: wrote")),
        "failed before the server finished writing"
    );
    assert_usable(&session).await;
    let metrics = session.metrics();
    assert_eq!(metrics.oversize_frames, 1);
    assert_eq!(metrics.late_responses_dropped, 0, "{metrics:?}");
    shutdown_clean(&session).await;
}

/// The id comes after the limit while other requests are pending: the
/// request fails when its id has streamed past (the end of the line), with
/// the line's whole size, and the other request is not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_with_the_id_last_among_several_fails_when_the_id_passes() {
    let session = start(&[], limited()).await;
    let slow = start_tool(
        &session,
        "slow",
        json!({"steps": 10, "step_ms": 50}),
        opts(20),
    )
    .await;
    fails_by_its_id_with_its_whole_size(&session).await;
    let slow = within(10, "the other request", slow.outcome()).await;
    assert!(slow.is_ok(), "the other request answers normally: {slow:?}");
    assert_eq!(session.metrics().oversize_frames, 1);
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}

/// A 1 MiB answer with the id last fails its request when the id has
/// passed (not at the limit), with the line's whole size.
async fn fails_by_its_id_with_its_whole_size(session: &drainpipe_host::session::Session) {
    let outcome = within(
        10,
        "id-last oversize",
        tool(
            session,
            "sized",
            json!({"bytes": 1 << 20, "id_last": true}),
            opts(20),
        ),
    )
    .await;
    assert_eq!(
        outcome,
        Err(CallError::TooLarge {
            received_bytes: 1 << 20,
            limit_bytes: LIMIT
        }),
        "failed by its id at the end of the line, with the whole size"
    );
}

/// After a request ended unanswered (timed out, so its answer may still
/// come), a response that names no id before the limit is not pinned on the
/// one request pending: that waits for the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_may_still_be_answered_stops_the_shortcut() {
    let session = start(&[], limited()).await;
    let first = within(
        10,
        "timed out",
        tool(
            &session,
            "slow",
            json!({"steps": 4, "step_ms": 100}),
            opts_ms(50),
        ),
    )
    .await;
    assert!(
        matches!(first, Err(CallError::TimedOut { .. })),
        "{first:?}"
    );
    fails_by_its_id_with_its_whole_size(&session).await;
    shutdown_clean(&session).await;
}

/// Exactly at the limit passes; one byte more does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn just_below_at_and_just_above_the_limit() {
    let session = start(&[], limited()).await;
    for bytes in [LIMIT - 1, LIMIT] {
        let response = within(
            10,
            "within the limit",
            tool(&session, "sized", json!({"bytes": bytes}), opts(5)),
        )
        .await;
        assert_eq!(response.expect("fits").wire_bytes as u64, bytes);
    }
    let above = within(
        10,
        "over the limit",
        tool(&session, "sized", json!({"bytes": LIMIT + 1}), opts(5)),
    )
    .await;
    assert_eq!(
        above,
        Err(CallError::TooLarge {
            received_bytes: LIMIT + 1,
            limit_bytes: LIMIT
        })
    );
    assert_usable(&session).await;
    assert_eq!(session.metrics().largest_frame_bytes, LIMIT);
    shutdown_clean(&session).await;
}

/// Under the kill policy, the request fails as too large and the session ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_kill_policy_ends_the_session() {
    let session = start(
        &[],
        SessionConfig {
            oversize: OversizePolicy::KillSession,
            ..limited()
        },
    )
    .await;
    let outcome = within(
        10,
        "oversize",
        tool(&session, "sized", json!({"bytes": LIMIT * 4}), opts(5)),
    )
    .await;
    assert!(
        matches!(outcome, Err(CallError::TooLarge { .. })),
        "{outcome:?}"
    );
    let next = within(
        10,
        "after the kill",
        tool(&session, "echo", json!({}), opts(5)),
    )
    .await;
    assert!(
        matches!(next, Err(CallError::SessionLost { .. })),
        "{next:?}"
    );
    assert_eq!(session.metrics().process_kills, 1);
    shutdown_clean(&session).await;
}

/// A flood of oversize lines past the threshold kills the session even under
/// the recover policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_flood_past_the_threshold_kills_the_session() {
    let session = start(
        &[],
        SessionConfig {
            max_oversize_frames: Some(2),
            ..limited()
        },
    )
    .await;
    for _ in 0..2 {
        let outcome = within(
            10,
            "oversize",
            tool(&session, "sized", json!({"bytes": LIMIT * 2}), opts(5)),
        )
        .await;
        assert!(
            matches!(outcome, Err(CallError::TooLarge { .. })),
            "{outcome:?}"
        );
    }
    assert!(session.lost().is_none(), "two are tolerated");
    let third = within(
        10,
        "third oversize",
        tool(&session, "sized", json!({"bytes": LIMIT * 2}), opts(5)),
    )
    .await;
    assert!(
        matches!(third, Err(CallError::TooLarge { .. })),
        "{third:?}"
    );
    within(
        5,
        "session lost",
        wait_until(4, "lost", || session.lost().is_some()),
    )
    .await;
    assert!(session.lost().unwrap().contains("oversize"));
    shutdown_clean(&session).await;
}

/// A stray log line on stdout is diverted and counted; the call it came with still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_log_line_is_diverted_and_counted() {
    let session = start(&[], SessionConfig::default()).await;
    let response = within(
        10,
        "stray_log",
        tool(&session, "stray_log", json!({}), opts(5)),
    )
    .await;
    assert_eq!(
        first_text(&response.expect("answers")),
        "wrote a stray log line to stdout"
    );
    assert_eq!(session.metrics().not_protocol_lines, 1);
    shutdown_clean(&session).await;

    let strict = start(
        &[],
        SessionConfig {
            max_not_protocol_lines: Some(0),
            ..SessionConfig::default()
        },
    )
    .await;
    let _ = within(
        10,
        "stray_log, strict",
        tool(&strict, "stray_log", json!({}), opts(5)),
    )
    .await;
    within(
        5,
        "session lost",
        wait_until(4, "lost", || strict.lost().is_some()),
    )
    .await;
    assert!(strict.lost().unwrap().contains("non-protocol"));
    shutdown_clean(&strict).await;
}

/// A malformed line with a readable id fails that request, and only that
/// one. With the id after the bad byte nothing past the error is read, but
/// the line is shaped as a response while only this request is pending: it
/// fails at once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_response_fails_its_request() {
    let session = start(&[], SessionConfig::default()).await;
    for id_last in [false, true] {
        let outcome = within(
            10,
            "malformed",
            tool(&session, "malformed", json!({"id_last": id_last}), opts(5)),
        )
        .await;
        assert!(
            matches!(outcome, Err(CallError::Malformed { .. })),
            "id_last={id_last}: {outcome:?}"
        );
    }
    assert_eq!(session.metrics().malformed_frames, 2);
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}

/// Payloads that break careless framers arrive intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tricky_huge_and_many_block_payloads_arrive_intact() {
    let session = start(&[], SessionConfig::default()).await;
    let tricky = within(10, "tricky", tool(&session, "tricky", json!({}), opts(5)))
        .await
        .expect("tricky");
    let texts = tricky.result["structuredContent"]["texts"]
        .as_array()
        .expect("texts")
        .clone();
    assert_eq!(texts.len(), 5);
    for (i, expected) in texts.iter().enumerate() {
        assert_eq!(&tricky.result["content"][i]["text"], expected);
    }
    assert!(
        texts[2]
            .as_str()
            .unwrap()
            .contains("日本語 한국어 العربية 😀🚀 𝄞")
    );
    assert!(texts[1].as_str().unwrap().contains('\u{0}'));
    assert!(
        texts[3].as_str().unwrap().len() > 256 << 10,
        "a long line without breaks"
    );

    let huge = within(
        10,
        "huge_field",
        tool(&session, "huge_field", json!({"bytes": 2 << 20}), opts(5)),
    )
    .await
    .expect("huge");
    assert_eq!(
        huge.result["structuredContent"]["blob"]
            .as_str()
            .unwrap()
            .len(),
        2 << 20
    );

    let many = within(
        10,
        "many_blocks",
        tool(&session, "many_blocks", json!({"count": 5000}), opts(5)),
    )
    .await
    .expect("many");
    assert_eq!(many.result["content"].as_array().unwrap().len(), 5000);
    assert_eq!(
        session.metrics().malformed_frames + session.metrics().not_protocol_lines,
        0
    );
    shutdown_clean(&session).await;
}

/// A call that asks for its result condensed gets a valid result within its
/// budget that says what was cut, for results under and over the transport
/// limit, the id first or last; a call that does not ask still gets
/// `TooLarge`; a budget below the condenser's minimum is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_can_ask_for_its_result_condensed() {
    let session = start(&[], limited()).await;
    let budget = 16 << 10;
    for (bytes, id_last) in [
        (40_000, false),
        (40_000, true),
        (5_000_000, false),
        (5_000_000, true),
    ] {
        let response = within(
            20,
            "condensed",
            session.call_tool(
                "sized",
                json!({"bytes": bytes, "id_last": id_last}),
                opts(15).condensed_to(budget),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{bytes} bytes, id_last={id_last}: {e}"));
        assert!(
            response.wire_bytes <= budget,
            "{} bytes",
            response.wire_bytes
        );
        // Both ends of the text (the default), the mark between.
        let text = response.result["content"][0]["text"].as_str().unwrap();
        let (head, rest) = text
            .split_once("\n[… drainpipe left out ")
            .unwrap_or_else(|| panic!("no mark: {text}"));
        let (_, tail) = rest.split_once(" …]\n").expect("the mark ends");
        for end in [head, tail] {
            assert!(end.len() > 2_000 && end.bytes().all(|b| b == b'x'), "{end}");
        }
        assert_eq!(
            response.result["_meta"]["io.drainpipe/truncated"]["originalBytes"],
            json!(bytes)
        );
    }
    assert_eq!(
        session.metrics().results_condensed,
        2,
        "the two over the limit"
    );
    let plain = within(
        20,
        "not condensed",
        tool(
            &session,
            "sized",
            json!({"bytes": 5_000_000, "id_last": true}),
            opts(15),
        ),
    )
    .await;
    assert!(
        matches!(plain, Err(CallError::TooLarge { .. })),
        "{plain:?}"
    );
    let refused = session
        .call_tool("echo", json!({}), opts(5).condensed_to(100))
        .await;
    assert!(
        matches!(refused, Err(CallError::Rejected { .. })),
        "{refused:?}"
    );
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}

/// A call can ask for its result within a number of characters: the texts
/// of `content`, decoded, total at most that many UTF-16 units, and so
/// does `structuredContent` as JSON text, though the result takes more
/// bytes than that (wide characters, escapes, a text sent twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_can_ask_for_its_result_within_characters() {
    let session = start(&[], limited()).await;
    let amount = 20_000;
    let response = within(
        20,
        "condensed in characters",
        session.call_tool(
            "tricky",
            json!({}),
            opts(15).condensed_within(Clip::chars(amount)),
        ),
    )
    .await
    .expect("condensed");
    let units: usize = response.result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .map(|text| text.encode_utf16().count())
        .sum();
    let structured = response.result["structuredContent"].to_string();
    assert!(units <= amount, "{units} UTF-16 units of text");
    assert!(structured.encode_utf16().count() <= amount);
    assert!(
        response.wire_bytes > amount,
        "{} bytes: a byte budget would have kept less",
        response.wire_bytes
    );
    assert_eq!(session.metrics().results_condensed, 1);
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}
