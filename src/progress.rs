//! The progress bar on standard error. `auto` draws it only on a terminal and only once work has
//! run for a second, so short runs and pipelines never see it; `always` draws it even when
//! standard error is a file (one plain line per second); `never` and `--quiet` draw nothing.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

/// When to show progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Auto,
    Always,
    Never,
}

/// Work shorter than this never shows a bar in `auto` mode.
const AUTO_DELAY: Duration = Duration::from_secs(1);

/// Progress over a known number of bytes.
pub struct Progress {
    mode: ProgressMode,
    total: u64,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: u64) -> Progress {
        let mode = match mode {
            ProgressMode::Auto if !io::stderr().is_terminal() => ProgressMode::Never,
            m => m,
        };
        let mut p = Progress { mode, total, started: Instant::now(), bar: None };
        if mode == ProgressMode::Always {
            p.show();
        }
        p
    }

    fn show(&mut self) {
        let target = if io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::term_like_with_hz(Box::new(PlainLines), 1)
        };
        let bar = ProgressBar::with_draw_target(Some(self.total), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        ) {
            bar.set_style(style);
        }
        self.bar = Some(bar);
    }

    /// Records that `done` bytes of the total are finished.
    pub fn set(&mut self, done: u64) {
        if self.bar.is_none() && self.mode == ProgressMode::Auto && self.started.elapsed() >= AUTO_DELAY {
            self.show();
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// Removes the bar (it leaves no line behind on a terminal).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A draw target for a standard error that is not a terminal: one line per draw, no cursor moves.
#[derive(Debug)]
struct PlainLines;

impl TermLike for PlainLines {
    fn width(&self) -> u16 {
        80
    }
    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        writeln!(io::stderr(), "{s}")
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.write_line(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}
