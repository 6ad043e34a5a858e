//! What a command gives back and how it prints: [`CliResult`] (an error is
//! the message `main` prints after `localdp: error:`) and [`say`], the one
//! way to write a result to stdout.

use std::io::{self, Write};

/// A command's result: `Err` holds the message printed on stderr, and the
/// run exits with 1.
pub type CliResult<T = ()> = Result<T, String>;

/// What a failed write to stdout ends in. A reader that went away (`localdp
/// aggregate … | head -3`) ends the run quietly with SIGPIPE's exit status
/// (128 + 13), as it ends a C tool, where `println!` would panic; any other
/// failure is an error.
pub fn stdout_failed(e: io::Error) -> String {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(141);
    }
    format!("stdout: {e}")
}

/// Writes `text` and a newline to stdout (see [`stdout_failed`]).
pub fn say(text: impl std::fmt::Display) -> CliResult {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(stdout_failed)
}
