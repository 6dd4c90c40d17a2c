//! `drainpipe-fixture`: a small MCP stdio server whose tools reproduce every
//! failure mode drainpipe guards against. Used by the tests and the demo.
//!
//! ```text
//! drainpipe-fixture                     serve MCP on stdin/stdout
//!   --never-read-stdin                  never read stdin; send a heartbeat notification every 20 ms
//!   --linger                            keep running after stdin closes
//!   --ignore-sigterm                    survive SIGTERM (only SIGKILL ends it)
//!   --stray-stdout                      print a banner line on stdout at start
//!   --ignore-cancel                     log cancellations but keep working
//! drainpipe-fixture --print-forever [--children N]
//!                                       print lines to stdout until killed, with N copies doing the same
//! ```
//!
//! Tools: `large`, `slow`, `spawn_forever`, `noisy_stderr`, `stray_log`,
//! `malformed`, `sized`, `huge_field`, `many_blocks`, `tricky`, `echo`,
//! `health`, `bounded`, `close_stdout`, `die_mid_frame`; `tools/list` describes each.

#[path = "../fixture/mod.rs"]
mod fixture;

fn main() {
    fixture::set_self_args(&[]);
    match fixture::Options::parse(std::env::args().skip(1)) {
        Ok(Some(options)) => std::process::exit(fixture::run(options)),
        Ok(None) => println!("{}", fixture::USAGE),
        Err(message) => {
            eprintln!("drainpipe-fixture: {message} (see --help)");
            std::process::exit(2);
        }
    }
}
