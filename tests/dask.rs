//! The Dask driver, `tensorop-dask` (`python/tensorop_cli/dask_driver.py`, `docs/dask.md`): runs its
//! end-to-end tests, `python3 -m pytest -q python/tests`, against this build's binary
//! (`TENSOROP_BIN`) with the package from the source tree (`PYTHONPATH=python`). They start a
//! local Dask cluster of four worker processes, run 64 shard pairs and one pair split in 8
//! parts, kill a worker in flight, and compare every output and the merged stats with single
//! runs. They need python3 with pytest, numpy and dask's `distributed`; without them this test
//! prints why and passes, unless `TENSOROP_REQUIRE_DASK=1` (as CI sets), which makes it fail.

use crate::common::{bin, manifest_dir, python_modules_available, skip};
use std::process::Command;

#[test]
fn dask_driver_end_to_end() {
    const TEST: &str = "dask_driver_end_to_end";
    if let Err(why) = python_modules_available(&["pytest", "numpy", "distributed"]) {
        skip(TEST, "TENSOROP_REQUIRE_DASK", &format!("{why} (pip install pytest numpy 'dask[distributed]')"));
        return;
    }
    let root = manifest_dir();
    let mut pythonpath = std::ffi::OsString::from(root.join("python"));
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(if cfg!(windows) { ";" } else { ":" });
        pythonpath.push(old);
    }
    let out = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
        .current_dir(root)
        .env("TENSOROP_BIN", bin())
        .env("PYTHONPATH", pythonpath)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3 -m pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(out.status.success(), "python/tests failed ({}):\n{stdout}\n{stderr}", out.status);
    // pytest exits 0 when every test skips, e.g. on a dask that cannot start a cluster here.
    if stdout.contains("skipped") && !stdout.contains(" passed") {
        skip(TEST, "TENSOROP_REQUIRE_DASK", &format!("every test of python/tests skipped:\n{stdout}"));
    }
}
