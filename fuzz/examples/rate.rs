//! Times the `condense` property natively over corpus directories, by the
//! kind of input (bytes, bytes with links, characters, tokens; large):
//! where a fuzz run's time goes, without libFuzzer's instrumentation.
//!
//!   cargo run --release --example rate -- fuzz/corpus/condense [DIR...]
//!
//! `RATE_KINDS=0,1,2,3` times only the kinds listed (by their index in
//! the table it prints), for a profile of one kind.

use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use drainpipe_fuzz::condense::CondenseInput;

const KINDS: [&str; 5] = ["bytes", "bytes, linked", "characters", "tokens", "large"];

fn main() -> std::io::Result<()> {
    let kinds: Option<Vec<usize>> = std::env::var("RATE_KINDS").ok().map(|list| {
        list.split(',')
            .filter_map(|k| k.trim().parse().ok())
            .collect()
    });
    let mut inputs = Vec::new();
    for dir in std::env::args().skip(1) {
        for entry in std::fs::read_dir(dir)? {
            let data = std::fs::read(entry?.path())?;
            if let Ok(input) = CondenseInput::arbitrary_take_rest(Unstructured::new(&data))
                && kinds.as_ref().is_none_or(|k| k.contains(&input.kind()))
            {
                inputs.push(input);
            }
        }
    }
    // Time, inputs, bytes of response, by kind.
    let mut kinds = [(Duration::ZERO, 0u32, 0usize); KINDS.len()];
    let mut generating = Duration::ZERO;
    let mut slowest = (Duration::ZERO, None);
    for input in &inputs {
        let start = Instant::now();
        let line = input.line();
        generating += start.elapsed();
        let start = Instant::now();
        drainpipe_fuzz::check_condense(input);
        let took = start.elapsed();
        let kind = &mut kinds[input.kind()];
        kind.0 += took;
        kind.1 += 1;
        kind.2 += line.len();
        if took > slowest.0 {
            slowest = (took, Some(input));
        }
    }
    let total: Duration = kinds.iter().map(|k| k.0).sum();
    let each = |time: Duration, count: u32| time.as_secs_f64() * 1e3 / f64::from(count.max(1));
    println!(
        "{} inputs in {:.3} s: {:.0} a second (generating a response: {:.3} ms each, included)",
        inputs.len(),
        total.as_secs_f64(),
        inputs.len() as f64 / total.as_secs_f64(),
        each(generating, inputs.len() as u32)
    );
    for ((time, count, bytes), name) in kinds.into_iter().zip(KINDS) {
        if count > 0 {
            println!(
                "  {name:13} {count:6} inputs, {:7.3} ms each, {:5.1} % of the time, {:7} bytes on average",
                each(time, count),
                100.0 * time.as_secs_f64() / total.as_secs_f64(),
                bytes / count as usize
            );
        }
    }
    if let (took, Some(input)) = slowest {
        println!("slowest: {:.3} ms, {input:?}", took.as_secs_f64() * 1e3);
    }
    Ok(())
}
