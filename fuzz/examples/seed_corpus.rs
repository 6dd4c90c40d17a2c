//! Writes the generated seed corpus: `cargo run --example seed_corpus`
//! (every target), `cargo run --example seed_corpus -- sse` (the ones named).
//!
//! Only `seed-*` files are rewritten (stale ones removed); inputs found by
//! fuzzing and `regression-*` files are kept.

use std::fs;
use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut total = 0;
    // Targets named on the command line only, if any.
    let only: Vec<String> = std::env::args().skip(1).collect();
    for (target, seeds) in drainpipe_fuzz::seeds::all() {
        if !only.is_empty() && !only.iter().any(|name| name == target) {
            continue;
        }
        let dir = root.join(target);
        fs::create_dir_all(&dir)?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
            {
                fs::remove_file(path)?;
            }
        }
        for (n, seed) in seeds.iter().enumerate() {
            fs::write(dir.join(format!("seed-{n:03}")), seed)?;
            total += seed.len();
        }
        println!("{target}: {} seeds", seeds.len());
    }
    println!("{total} bytes in all");
    Ok(())
}
