//! Every committed corpus file through its target's property, in plain
//! `cargo test` (no nightly, no libFuzzer): a regression found by fuzzing
//! stays fixed once its input is in `corpus/`.

use std::fs;
use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use drainpipe_fuzz::budget::BudgetInput;
use drainpipe_fuzz::condense::CondenseInput;
use drainpipe_fuzz::ops::OpsInput;
use drainpipe_fuzz::oversize::OversizeInput;
use drainpipe_fuzz::{
    Case, check_budget, check_chunking, check_differential, check_json_line, check_ops,
    check_oversize,
};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus for {target}");
    files
}

/// Runs `check` on every file and reports all failing files at once.
fn replay(target: &str, check: impl Fn(&[u8])) {
    let mut failed = Vec::new();
    for (path, bytes) in corpus(target) {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&bytes))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} corpus files fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Decodes like libfuzzer-sys's `fuzz_target!(|input: T| ...)` does.
fn structured<T: for<'a> Arbitrary<'a>>(bytes: &[u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

#[test]
fn chunking_corpus() {
    replay("chunking", |bytes| check_chunking(&Case::decode(bytes)));
}

#[test]
fn differential_corpus() {
    replay("differential", |bytes| {
        check_differential(&Case::decode(bytes))
    });
}

#[test]
fn oversize_recovery_corpus() {
    replay("oversize_recovery", |bytes| {
        if let Some(input) = structured::<OversizeInput>(bytes) {
            check_oversize(&input);
        }
    });
}

#[test]
fn json_validation_corpus() {
    replay("json_validation", check_json_line);
}

#[test]
fn operations_corpus() {
    replay("operations", |bytes| {
        if let Some(input) = structured::<OpsInput>(bytes) {
            check_ops(&input);
        }
    });
}

#[test]
fn budget_corpus() {
    replay("budget", |bytes| {
        if let Some(input) = structured::<BudgetInput>(bytes) {
            check_budget(&input);
        }
    });
}

#[test]
fn condense_corpus() {
    replay("condense", |bytes| {
        if let Some(input) = structured::<CondenseInput>(bytes) {
            drainpipe_fuzz::check_condense(&input);
        }
    });
}

#[test]
fn sse_corpus() {
    replay("sse", |bytes| {
        drainpipe_fuzz::check_sse(&drainpipe_fuzz::sse::SseInput::decode(bytes))
    });
}

#[cfg(feature = "component")]
#[test]
fn component_parity_corpus() {
    replay("component_parity", |bytes| {
        drainpipe_fuzz::check_component_parity(&Case::decode(bytes))
    });
}
