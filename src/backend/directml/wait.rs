//! Waiting for DirectML's work, bounded: every wait for the GPU has a timeout, and a wait that
//! times out, fails, or finds the device removed ends the run with the reason (the device's
//! own, `GetDeviceRemovedReason`) and the chunk it was running (`docs/backends.md`,
//! "Timeouts and lost devices"). The logic is here, apart from Direct3D, behind [`Gpu`], so
//! that tests drive it on every system with a fence that never signals or a device that is
//! removed.

use anyhow::{bail, Result};
use std::time::Duration;

/// The longest a single wait for the GPU may take by default: one chunk (at most 16 MiB of
/// output) is milliseconds on a GPU and about a second on a software rasteriser, so a minute
/// means the work was lost. `TENSOROP_DIRECTML_TIMEOUT_S` changes it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How a wait for the GPU ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// The fence reached the value waited for.
    Done,
    /// The timeout passed first.
    TimedOut,
    /// The wait itself failed (the event's handle), with the system's message.
    Failed(String),
}

/// What a wait needs of the device: wait for the submitted work, and say whether (and why) the
/// device was removed.
pub trait Gpu {
    /// Waits up to `timeout` for the work submitted last.
    fn wait(&mut self, timeout: Duration) -> Waited;
    /// The reason the device was removed (`DXGI_ERROR_DEVICE_HUNG`, ...), or `None` while it
    /// is fine.
    fn removed(&self) -> Option<String>;
}

/// Waits for the work submitted last on `gpu`, which ran `what` (`the dispatch of chunk 3,
/// output elements 256 to 383`), up to `timeout`. Fails with the reason when the wait times
/// out or fails, or when the device was removed meanwhile (its results then mean nothing).
pub fn finish(gpu: &mut dyn Gpu, timeout: Duration, what: &str) -> Result<()> {
    let waited = gpu.wait(timeout);
    let removed = gpu.removed();
    match (waited, removed) {
        (Waited::Done, None) => Ok(()),
        (Waited::Done, Some(reason)) => bail!("{what}: the device was removed while it ran ({reason})"),
        (Waited::TimedOut, removed) => {
            let why = removed.map_or_else(
                || "the device reports no fault: the work was lost, or the driver has no timeout recovery".to_string(),
                |r| format!("the device was removed: {r}"),
            );
            bail!(
                "{what} did not finish within {} ({why}); nothing more was sent to the device. If the job is this \
                 slow on purpose, raise {}",
                seconds(timeout),
                super::TIMEOUT_ENV
            )
        }
        (Waited::Failed(e), removed) => {
            let also = removed.map_or(String::new(), |r| format!("; the device was removed: {r}"));
            bail!("{what}: waiting for the device failed: {e}{also}")
        }
    }
}

/// `60 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// One command list's DRED breadcrumbs (Windows, where the system has DRED): the operations it
/// recorded, as `D3D12_AUTO_BREADCRUMB_OP` values, and how many of them the device completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breadcrumbs {
    pub done: u32,
    pub ops: Vec<u32>,
}

impl Breadcrumbs {
    /// `a command list stopped after 4 of 9 operations (the last done: ResourceBarrier; the next:
    /// Dispatch)`.
    pub fn describe(&self) -> String {
        let at = |i: u32| self.ops.get(i as usize).map_or_else(|| "none".to_string(), |&op| op_name(op));
        let last = if self.done == 0 { "none".to_string() } else { at(self.done - 1) };
        format!(
            "a command list stopped after {} of {} operations (the last done: {last}; the next: {})",
            self.done,
            self.ops.len(),
            at(self.done)
        )
    }

    /// What DRED says of the lists that did not finish, for an error message; empty when
    /// there are none.
    pub fn summary(lists: &[Breadcrumbs]) -> String {
        if lists.is_empty() {
            return String::new();
        }
        let all: Vec<String> = lists.iter().map(Breadcrumbs::describe).collect();
        format!("; DRED breadcrumbs: {}", all.join("; "))
    }
}

/// The name of a `D3D12_AUTO_BREADCRUMB_OP` (those a compute queue records; others by number).
fn op_name(op: u32) -> String {
    const NAMES: [&str; 21] = [
        "SetMarker",
        "BeginEvent",
        "EndEvent",
        "DrawInstanced",
        "DrawIndexedInstanced",
        "ExecuteIndirect",
        "Dispatch",
        "CopyBufferRegion",
        "CopyTextureRegion",
        "CopyResource",
        "CopyTiles",
        "ResolveSubresource",
        "ClearRenderTargetView",
        "ClearUnorderedAccessView",
        "ClearDepthStencilView",
        "ResourceBarrier",
        "ExecuteBundle",
        "Present",
        "ResolveQueryData",
        "BeginSubmission",
        "EndSubmission",
    ];
    NAMES.get(op as usize).map_or_else(|| format!("operation {op}"), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A fence that signals after `after` of waiting (never, for `None`), on a device removed
    /// with `removed`.
    struct Fake {
        after: Option<Duration>,
        removed: Option<&'static str>,
        waited: Cell<Duration>,
    }

    impl Gpu for Fake {
        fn wait(&mut self, timeout: Duration) -> Waited {
            match self.after {
                Some(d) if d <= timeout => {
                    self.waited.set(d);
                    Waited::Done
                }
                _ => {
                    self.waited.set(timeout);
                    Waited::TimedOut
                }
            }
        }
        fn removed(&self) -> Option<String> {
            self.removed.map(String::from)
        }
    }

    fn fake(after: Option<Duration>, removed: Option<&'static str>) -> Fake {
        Fake { after, removed, waited: Cell::new(Duration::ZERO) }
    }

    const WHAT: &str = "the dispatch of chunk 3 (output elements 256 to 383)";

    #[test]
    fn a_fence_that_never_signals_times_out_and_names_the_chunk() {
        let mut gpu = fake(None, None);
        let e = finish(&mut gpu, Duration::from_millis(1500), WHAT).expect_err("a hang is an error");
        let text = format!("{e:#}");
        assert!(text.contains(WHAT) && text.contains("did not finish within 1.5 s"), "{text}");
        assert!(text.contains("reports no fault") && text.contains("TENSOROP_DIRECTML_TIMEOUT_S"), "{text}");
        assert_eq!(gpu.waited.get(), Duration::from_millis(1500), "waited exactly the timeout, no longer");
    }

    #[test]
    fn a_removed_device_is_an_error_with_its_reason_whether_or_not_the_fence_signalled() {
        let mut hung = fake(None, Some("DXGI_ERROR_DEVICE_HUNG (0x887A0006)"));
        let text = format!("{:#}", finish(&mut hung, DEFAULT_TIMEOUT, WHAT).expect_err("removed"));
        assert!(text.contains("the device was removed: DXGI_ERROR_DEVICE_HUNG"), "{text}");
        let mut removed = fake(Some(Duration::from_millis(1)), Some("DXGI_ERROR_DEVICE_REMOVED (0x887A0005)"));
        let text = format!("{:#}", finish(&mut removed, DEFAULT_TIMEOUT, WHAT).expect_err("removed"));
        assert!(text.contains(WHAT) && text.contains("removed while it ran (DXGI_ERROR_DEVICE_REMOVED"), "{text}");
    }

    #[test]
    fn work_that_finishes_in_time_on_a_sound_device_is_fine() {
        let mut gpu = fake(Some(Duration::from_millis(5)), None);
        finish(&mut gpu, DEFAULT_TIMEOUT, WHAT).expect("finished");
    }

    #[test]
    fn a_failed_wait_says_so() {
        struct Broken;
        impl Gpu for Broken {
            fn wait(&mut self, _: Duration) -> Waited {
                Waited::Failed("the handle is invalid".into())
            }
            fn removed(&self) -> Option<String> {
                None
            }
        }
        let text = format!("{:#}", finish(&mut Broken, DEFAULT_TIMEOUT, WHAT).expect_err("failed"));
        assert!(text.contains("waiting for the device failed: the handle is invalid"), "{text}");
    }

    #[test]
    fn breadcrumbs_say_how_far_each_unfinished_list_got() {
        let b = Breadcrumbs { done: 4, ops: vec![15, 7, 15, 15, 6, 15, 7, 18, 99] };
        assert_eq!(
            b.describe(),
            "a command list stopped after 4 of 9 operations (the last done: ResourceBarrier; the next: Dispatch)"
        );
        let none = Breadcrumbs { done: 0, ops: vec![99] };
        assert!(none.describe().contains("the last done: none; the next: operation 99"), "{}", none.describe());
        assert_eq!(Breadcrumbs::summary(&[]), "");
        assert!(Breadcrumbs::summary(&[b, none]).starts_with("; DRED breadcrumbs: a command list stopped after 4"));
    }
}
