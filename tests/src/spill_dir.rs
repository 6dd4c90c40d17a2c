//! A private temp dir for one proxy (its `TMPDIR`), so that its spill
//! directory is the only one there; removed when dropped.

use std::path::PathBuf;

/// A private temp dir for one proxy, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh one for `test`.
    pub fn new(test: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-spilltest-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the temp dir");
        TempDir(dir)
    }

    /// The spill directories in it.
    pub fn spill_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.0)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("drainpipe-spill-"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
