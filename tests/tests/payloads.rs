//! Guarantee: the client never parses a message over the transport limit,
//! counts that limit in bytes (not characters, not reads), delivers every
//! message within it whole, fails exactly the request whose answer was too
//! large or malformed, and the next request answers.

use drainpipe_host::session::{CallError, SessionConfig};
use drainpipe_release::*;
use serde_json::json;

const LIMIT: u64 = 256 << 10;

/// Just below and at the limit arrive whole; one byte above fails that
/// request as too large, and the next request answers quickly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn just_below_and_just_above_the_transport_limit() {
    let session = start_fixture(&[], limited(LIMIT as usize)).await;
    for bytes in [LIMIT - 1, LIMIT] {
        let response = within(
            10,
            "within the limit",
            tool(&session, "sized", json!({"bytes": bytes}), opts(5)),
        )
        .await
        .unwrap_or_else(|e| panic!("{bytes} bytes must arrive: {e}"));
        assert_eq!(response.wire_bytes as u64, bytes);
        assert!(
            first_text(&response).bytes().all(|b| b == b'x'),
            "the padding arrived as sent"
        );
    }
    for id_last in [false, true] {
        let above = within(
            10,
            "over the limit",
            tool(
                &session,
                "sized",
                json!({"bytes": LIMIT + 1, "id_last": id_last}),
                opts(3),
            ),
        )
        .await;
        // Whether the id came before the limit or after it (the TypeScript
        // SDK's order), that request fails as too large, not by a timeout.
        match above {
            Err(CallError::TooLarge { limit_bytes, .. }) => assert_eq!(limit_bytes, LIMIT),
            other => panic!("id_last={id_last}: {other:?}"),
        }
        fixture_echo_quickly(&session, "after an oversize response").await;
    }
    let metrics = session.metrics();
    assert_eq!(metrics.oversize_frames, 2, "{metrics:?}");
    assert_eq!(
        metrics.largest_frame_bytes, LIMIT,
        "nothing longer was framed: {metrics:?}"
    );
    shutdown_clean(&session).await;
}

/// The limit counts bytes on the wire: a response full of multibyte
/// characters and escapes passes at exactly its byte length and fails one
/// byte below it, though it has far fewer characters than bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_counts_utf8_bytes_not_characters() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let tricky = within(10, "tricky", tool(&session, "tricky", json!({}), opts(5)))
        .await
        .expect("tricky arrives");
    let bytes = tricky.wire_bytes;
    shutdown_clean(&session).await;
    let line = serde_json::to_string(&tricky.result).expect("serialises");
    assert!(
        line.chars().count() < line.len(),
        "the payload is multibyte"
    );

    let exact = start_fixture(&[], limited(bytes)).await;
    let fits = within(
        10,
        "tricky at its exact size",
        tool(&exact, "tricky", json!({}), opts(5)),
    )
    .await;
    assert_eq!(fits.expect("fits").result, tricky.result);
    shutdown_clean(&exact).await;

    let short = start_fixture(&[], limited(bytes - 1)).await;
    let over = within(
        10,
        "tricky one byte over",
        tool(&short, "tricky", json!({}), opts(5)),
    )
    .await;
    assert!(matches!(over, Err(CallError::TooLarge { .. })), "{over:?}");
    fixture_echo_quickly(&short, "after the multibyte oversize").await;
    shutdown_clean(&short).await;
}

/// One huge field, many small blocks, and quotes/multibyte/long unbroken
/// lines arrive intact, also when every read ends in the middle of a
/// message and of a character (reads of a prime number of bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_field_many_blocks_and_tricky_text_arrive_intact() {
    for read_chunk_bytes in [64 << 10, 4093] {
        let config = SessionConfig {
            read_chunk_bytes,
            ..SessionConfig::default()
        };
        let session = start_fixture(&[], config).await;

        let huge = within(
            20,
            "huge_field",
            tool(&session, "huge_field", json!({"bytes": 3 << 20}), opts(15)),
        )
        .await
        .expect("one 3 MiB field");
        let blob = huge.result["structuredContent"]["blob"]
            .as_str()
            .expect("blob");
        assert_eq!(blob.len(), 3 << 20);
        assert!(blob.bytes().all(|b| b == b'z'));

        let many = within(
            20,
            "many_blocks",
            tool(
                &session,
                "many_blocks",
                json!({"count": 20_000, "block_bytes": 16}),
                opts(15),
            ),
        )
        .await
        .expect("many blocks");
        let blocks = many.result["content"].as_array().expect("content");
        assert_eq!(blocks.len(), 20_000);
        for (i, block) in blocks.iter().enumerate() {
            assert_eq!(
                block["text"].as_str().unwrap(),
                format!("{i}:{}", "b".repeat(16)),
                "block {i} in order"
            );
        }

        let tricky = within(10, "tricky", tool(&session, "tricky", json!({}), opts(5)))
            .await
            .expect("tricky");
        let texts = tricky.result["structuredContent"]["texts"]
            .as_array()
            .expect("texts");
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(
                &tricky.result["content"][i]["text"], text,
                "text {i} is the same in both copies"
            );
        }
        let all: String = texts.iter().map(|t| t.as_str().unwrap()).collect();
        for needle in [
            r#"\" together, C:\path"#,
            "日本語 한국어 العربية 😀🚀 𝄞",
            "\u{0}\u{1}",
            "\u{2028}\u{2029}",
        ] {
            assert!(all.contains(needle), "{needle:?} survived");
        }
        assert!(
            texts[3].as_str().unwrap().len() > 256 << 10,
            "a long line without breaks"
        );

        let metrics = session.metrics();
        assert_eq!(
            metrics.malformed_frames + metrics.not_protocol_lines + metrics.oversize_frames,
            0,
            "{metrics:?}"
        );
        fixture_echo_quickly(&session, "after the big payloads").await;
        shutdown_clean(&session).await;
    }
}

/// Malformed JSON with a readable id fails that request only: a request in
/// flight at the same time still gets its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_fails_only_its_request() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let slow = start_tool(
        &session,
        "slow",
        json!({"steps": 3, "step_ms": 50}),
        opts(10),
    )
    .await;
    let outcome = within(
        10,
        "malformed",
        tool(&session, "malformed", json!({}), opts(5)),
    )
    .await;
    assert!(
        matches!(outcome, Err(CallError::Malformed { .. })),
        "{outcome:?}"
    );
    let slow = within(10, "the other request", slow.outcome())
        .await
        .expect("unaffected");
    assert_eq!(first_text(&slow), "done after 3 steps");
    assert_eq!(session.metrics().malformed_frames, 1);
    fixture_echo_quickly(&session, "after malformed JSON").await;
    shutdown_clean(&session).await;
}

/// Megabytes of stderr while a large response is on stdout: both pipes are
/// drained at once, stderr is kept bounded, and both calls answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn megabytes_of_noisy_stderr_during_a_large_response() {
    const NOISE: u64 = 64 << 20;
    let session = start_fixture(&[], limited(16 << 20)).await;
    let noisy = start_tool(&session, "noisy_stderr", json!({"bytes": NOISE}), opts(60)).await;
    let large = start_tool(&session, "large", json!({}), opts(60)).await;
    let large = within(60, "large during the noise", large.outcome())
        .await
        .expect("large");
    assert_eq!(large.wire_bytes, 8 << 20);
    let noisy = within(60, "noisy_stderr", noisy.outcome())
        .await
        .expect("noise ends");
    assert_eq!(noisy.result["structuredContent"]["bytes"], json!(NOISE));
    let metrics = session.metrics();
    assert!(
        metrics.stderr_bytes >= NOISE,
        "every stderr byte was read: {metrics:?}"
    );
    let kept = session.stderr();
    assert!(
        (kept.kept_text().len() as u64) < (1 << 20),
        "the stderr capture is bounded: kept {} bytes",
        kept.kept_text().len()
    );
    fixture_echo_quickly(&session, "after the noise").await;
    shutdown_clean(&session).await;
}

/// Accidental log lines on stdout (a banner at start, a line mid-session)
/// are diverted and counted, never taken for a response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accidental_stdout_log_lines_are_diverted() {
    let session = start_fixture(&["--stray-stdout"], SessionConfig::default()).await;
    let response = within(
        10,
        "stray_log",
        tool(&session, "stray_log", json!({}), opts(5)),
    )
    .await
    .expect("the call with the stray line answers");
    assert_eq!(first_text(&response), "wrote a stray log line to stdout");
    assert_eq!(
        session.metrics().not_protocol_lines,
        2,
        "banner and stray line"
    );
    fixture_echo_quickly(&session, "after stray stdout lines").await;
    shutdown_clean(&session).await;
}
