//! The browser the run page's tests drive (`crates/a2aflow-ui/tests/it/browser.rs`): Debian's
//! `chromium`, found on PATH (`chromium`, else `chromium-browser`) or installed with apt-get
//! when missing. A browser that cannot be had fails the run; the tests never skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The names the browser goes by on Debian and Ubuntu.
const NAMES: [&str; 2] = ["chromium", "chromium-browser"];

/// The path of chromium, installed first when it is missing; CI exports it to the test step as
/// `A2AFLOW_CHROMIUM`.
pub fn ensure_chromium(root: &Path) -> Result<String, String> {
    if let Some(found) = find() {
        return Ok(found.to_string_lossy().into_owned());
    }
    println!("\n==> chromium is missing: installing Debian's package");
    crate::ci::sh(root, "apt-get", &["update"], &[])?;
    crate::ci::sh(
        root,
        "apt-get",
        &["install", "-y", "chromium"],
        &[("DEBIAN_FRONTEND", "noninteractive")],
    )
    .map_err(|e| {
        format!("the run page's browser tests need chromium, and it could not be installed: {e}")
    })?;
    find()
        .map(|p| p.to_string_lossy().into_owned())
        .ok_or_else(|| {
            "apt-get installed chromium, but neither `chromium` nor `chromium-browser` is on PATH"
                .to_owned()
        })
}

/// The first of [`NAMES`] on PATH.
fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| NAMES.iter().map(move |n| dir.join(n)))
        .find(|p| is_runnable(p))
}

fn is_runnable(path: &Path) -> bool {
    path.is_file()
        && Command::new(path)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}
