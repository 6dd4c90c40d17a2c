//! One pass of the framer over one workload, natively or in the component:
//! the unit that `scripts/instructions.sh` runs under callgrind, collecting
//! only inside [`measured`] (so compiling and instantiating the component,
//! and generating the data, are not counted).
//!
//! `component_instructions <large|small> <strict|framing> <native|component|component-no-deadline>`

use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};
use drainpipe_host::component::{GuestLimits, Sandbox, SandboxOptions};

const CHUNK: usize = 64 << 10;

/// Pushes one chunk into a framer, calling back with each event.
type Push<'a> = dyn FnMut(&[u8], &mut dyn FnMut(Event<'_>)) + 'a;

/// The measured work: push every chunk, count the frames.
#[inline(never)]
fn measured(data: &[u8], push: &mut Push<'_>) -> usize {
    let mut frames = 0;
    for chunk in data.chunks(CHUNK) {
        push(chunk, &mut |event| {
            frames += usize::from(matches!(event, Event::Frame(_)))
        });
    }
    frames
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [which, mode, backend] = &args[..] else {
        panic!(
            "usage: component_instructions <large|small> <strict|framing> <native|component|component-no-deadline>"
        )
    };
    let data = match which.as_str() {
        "large" => workload::large(1, 2 << 20, 1),
        "small" => workload::small(20_000, 2),
        other => panic!("unknown workload {other:?}"),
    };
    let config = Config::default()
        .with_max_frame_bytes(16 << 20)
        .with_json_validation(mode == "strict");
    let frames = match backend.as_str() {
        "native" => {
            let mut framer = Framer::new(config);
            measured(&data, &mut |chunk, on_event| framer.push(chunk, on_event))
        }
        "component" | "component-no-deadline" => {
            let options = SandboxOptions {
                cache_dir: None,
                call_deadlines: backend == "component",
            };
            let sandbox = Sandbox::new(&options).expect("the component loads");
            let mut framer = sandbox
                .framer(config, GuestLimits::for_config(&config, CHUNK))
                .expect("a session starts");
            measured(&data, &mut |chunk, on_event| {
                framer.push_events(chunk, on_event).expect("push")
            })
        }
        other => panic!("unknown backend {other:?}"),
    };
    println!(
        "{which} {mode} {backend}: {frames} frames in {} bytes",
        data.len()
    );
}
