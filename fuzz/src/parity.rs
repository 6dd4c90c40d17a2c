//! The framer compiled into the host against the same framer as a
//! WebAssembly component in wasmtime (`drainpipe_host::component`): the same
//! chunks must give the same events after every push, the same bytes
//! buffered and, at the end, the same counters. Enabled by the `component`
//! feature (it builds wasmtime and the guest).

use std::time::Duration;

use drainpipe_framer::Framer;
use drainpipe_framer::testing::{OwnedEvent, assert_memory_bound};
use drainpipe_host::backend::FramerBackend;
use drainpipe_host::component::{GuestLimits, Sandbox};

use crate::case::Case;

/// The `component_parity` property, on the [`crate::case`] layout.
pub fn check_component_parity(case: &Case<'_>) {
    let mut native = Framer::new(case.config);
    // Production caps on memory, but a long deadline per call: under ASan on
    // a loaded machine one call can take longer than the production second,
    // and a deadline trap there says nothing about the framer.
    let mut limits = GuestLimits::for_config(&case.config, 1 << 20);
    limits.call_deadline = Duration::from_secs(60);
    let sandbox = Sandbox::shared().expect("the framer component compiles");
    let mut component = sandbox
        .framer(case.config, limits)
        .expect("the framer component instantiates");
    let lengths = case.lengths();
    let mut rest = case.stream;
    let mut step = 0;
    while !rest.is_empty() {
        // Zero lengths push empty chunks; a zero-only cycle must still end.
        let len = match lengths.get(step % lengths.len().max(1)) {
            Some(&len) if step <= case.stream.len() * 2 + 16 => len,
            _ => rest.len(),
        };
        step += 1;
        let (chunk, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        let mut expected = Vec::new();
        native.push(chunk, |e| expected.push(OwnedEvent::from(e)));
        assert_memory_bound(&native);
        let mut actual = Vec::new();
        component
            .push(chunk, &mut actual)
            .expect("the component accepts the chunk");
        assert_eq!(
            actual, expected,
            "component and native differ after pushing {chunk:?}"
        );
        let buffered = component
            .buffered()
            .expect("the component reports what it holds");
        assert_eq!(buffered as usize, native.buffered(), "bytes held differ");
    }
    if case.eof {
        let mut expected = Vec::new();
        native.finish(|e| expected.push(OwnedEvent::from(e)));
        let mut actual = Vec::new();
        component
            .finish(&mut actual)
            .expect("the component finishes");
        assert_eq!(actual, expected, "component and native differ at finish");
    }
    assert_eq!(
        component.stats().expect("the component reports its stats"),
        *native.stats(),
        "stats differ"
    );
}
