//! The fuzz seed corpus (`fuzz/corpus/<target>/*`) replayed in plain
//! `cargo test`: every committed file, as a stream, must give the same events
//! under any chunking and agree with the reference framer, under a few
//! limits around the sizes the corpus was built for. Inputs that fuzzing
//! found (and regression files) are replayed the same way, so they keep
//! being checked on stable, without libFuzzer.
//!
//! Layouts (see `fuzz/src/case.rs` and `fuzz/src/json_line.rs`): files of
//! `chunking`, `differential` and `component_parity` start with a 4-byte
//! header and `json_validation` files with a 2-byte header, stripped here;
//! files of the structured targets are replayed as raw bytes.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use drainpipe_framer::Config;
use drainpipe_framer::testing::{outcomes, reference_outcomes, run_split};

/// Every corpus file as `(name, stream)`.
fn corpus() -> &'static [(String, Vec<u8>)] {
    static CORPUS: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
        let mut files = Vec::new();
        for target in fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
            let target = target.unwrap().path();
            let header = match target.file_name().and_then(|n| n.to_str()) {
                Some("chunking" | "differential" | "component_parity") => 4,
                Some("json_validation") => 2,
                _ => 0,
            };
            for file in fs::read_dir(&target).unwrap() {
                let path = file.unwrap().path();
                let bytes = fs::read(&path).unwrap();
                let stream = bytes.get(header..).unwrap_or_default().to_vec();
                files.push((
                    path.strip_prefix(&root).unwrap().display().to_string(),
                    stream,
                ));
            }
        }
        files.sort();
        assert!(
            files.len() > 100,
            "the seed corpus is missing: {} files under {}",
            files.len(),
            root.display()
        );
        files
    })
}

/// The limits the corpus was built around (64 for the adversarial set), a
/// tiny one, none at all, and the default; strict and lax validation.
fn configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for max in [0, 16, 64, Config::DEFAULT_MAX_FRAME_BYTES] {
        for (depth, validate) in [(128, true), (3, true), (128, false)] {
            configs.push(
                Config::default()
                    .with_max_frame_bytes(max)
                    .with_max_depth(depth)
                    .with_json_validation(validate),
            );
        }
    }
    configs
}

/// Cuts inside every UTF-8 sequence and after every `\r` and `\n`.
fn boundary_cuts(stream: &[u8]) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut last = 0;
    for at in 1..stream.len() {
        let (before, here) = (stream[at - 1], stream[at]);
        if matches!(before, b'\r' | b'\n') || before >= 0xC0 || (0x80..0xC0).contains(&here) {
            lengths.push(at - last);
            last = at;
        }
    }
    lengths.push(usize::MAX);
    lengths
}

/// Both properties for one stream, config and chunking.
fn check(name: &str, stream: &[u8], config: Config, lengths: &[usize], eof: bool) {
    let whole = run_split(config, stream, &[], eof);
    let split = run_split(config, stream, lengths, eof);
    assert_eq!(
        split.0, whole.0,
        "{name}: events depend on chunking {lengths:?} ({config:?}, eof {eof})"
    );
    let (mut a, mut b) = (whole.1, split.1);
    // How much was buffered depends on the chunking; nothing else may.
    a.buffered_high_water = 0;
    b.buffered_high_water = 0;
    assert_eq!(
        a, b,
        "{name}: stats depend on chunking {lengths:?} ({config:?})"
    );
    let actual = outcomes(&whole.0);
    let expected = reference_outcomes(&config, stream, eof);
    assert_eq!(
        actual, expected,
        "{name}: framer vs reference ({config:?}, eof {eof})"
    );
}

#[test]
fn every_corpus_file_under_fixed_cuts() {
    for (name, stream) in corpus() {
        for config in configs() {
            for eof in [true, false] {
                check(name, stream, config, &[1], eof);
                check(name, stream, config, &boundary_cuts(stream), eof);
                check(name, stream, config, &[3, 0, 7, 64], eof);
            }
        }
    }
}

#[test]
fn every_corpus_file_under_random_cuts() {
    let configs = configs();
    bolero::check!()
        .with_type::<(u16, Vec<u8>, u8, bool)>()
        .for_each(|(file, cuts, selector, eof)| {
            let (name, stream) = &corpus()[usize::from(*file) % corpus().len()];
            let config = configs[usize::from(*selector) % configs.len()];
            let lengths: Vec<usize> = cuts.iter().map(|&c| usize::from(c % 33)).collect();
            check(name, stream, config, &lengths, *eof);
        });
}
