//! The progress bar on standard error. `auto` draws it only on a terminal and only once work has
//! run for a second, so short runs and pipelines never see it; `always` draws it even when
//! standard error is a file (one plain line per second); `never` and `--quiet` draw nothing.
//! The bar counts from the start even while hidden, so when `auto` reveals it its elapsed time
//! and its rate are those of the whole run, not of the moment it appeared.

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
    started: Instant,
    bar: Option<ProgressBar>,
    /// The bar is drawn (`auto` hides it for the first second).
    shown: bool,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: u64) -> Progress {
        Progress::on(mode, total, io::stderr().is_terminal())
    }

    /// [`Progress::new`], for a standard error that is a terminal or not.
    fn on(mode: ProgressMode, total: u64, terminal: bool) -> Progress {
        let mode = match mode {
            ProgressMode::Auto if !terminal => ProgressMode::Never,
            m => m,
        };
        let mut p = Progress { mode, started: Instant::now(), bar: None, shown: false };
        if mode != ProgressMode::Never {
            // Hidden until shown: its clock and rate estimate run from the start.
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            ) {
                bar.set_style(style);
            }
            p.bar = Some(bar);
        }
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
        if let Some(bar) = &self.bar {
            bar.set_draw_target(target);
            bar.tick();
        }
        self.shown = true;
    }

    /// Records that `done` bytes of the total are finished.
    pub fn set(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
        if !self.shown && self.mode == ProgressMode::Auto && self.started.elapsed() >= AUTO_DELAY {
            self.show();
        }
    }

    /// The elapsed time and rate the bar shows (for tests).
    #[cfg(test)]
    fn shown_state(&self) -> Option<(Duration, f64)> {
        let bar = self.bar.as_ref()?;
        Some((bar.elapsed(), bar.per_sec()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A bar revealed after a second of steady work shows that second and the steady rate, not
    /// the bytes of the whole first second divided by the instant it appeared.
    #[test]
    fn a_late_bar_shows_the_whole_runs_time_and_rate() {
        let total = 200 << 20;
        let start = Instant::now();
        let mut p = Progress::on(ProgressMode::Auto, total, true);
        // 10 MiB every 100 ms: 100 MiB/s.
        for step in 1..=12u64 {
            std::thread::sleep(Duration::from_millis(100));
            p.set(step * (10 << 20));
        }
        assert!(p.shown, "shown after a second");
        let (elapsed, rate) = p.shown_state().expect("a bar");
        assert!(elapsed >= Duration::from_millis(1100) && elapsed <= start.elapsed(), "elapsed {elapsed:?}");
        let mib_s = rate / f64::from(1 << 20);
        assert!((30.0..300.0).contains(&mib_s), "rate {mib_s:.1} MiB/s, not about 100");
    }
}
