//! Generated text files for the peers to read: what JSON has to escape on
//! the wire (quotes, backslashes, tabs, newlines) and multibyte characters
//! of two, three and four bytes, in a private directory removed when
//! dropped.

use std::path::PathBuf;

/// The line the files repeat.
const UNIT: &str = "línea «ünïcødé» with \"quotes\", a \\ and a tab\t😀\n";

/// A private directory with one generated text file, removed when dropped.
pub struct TextFile {
    /// The directory (canonical: the servers resolve symbolic links, and
    /// the temporary directory may be one), to serve as a root.
    pub dir: PathBuf,
    /// The file, `big.txt` in [`TextFile::dir`].
    pub path: PathBuf,
    /// The file's size in bytes.
    pub bytes: usize,
    /// The byte offset of the marker line's start, for
    /// [`TextFile::with_marker`].
    pub marker_at: Option<usize>,
}

impl TextFile {
    /// A file of [`UNIT`] lines cut to `bytes` bytes, less the part of a
    /// character the cut would split (up to 3 bytes), in a directory named
    /// after `name` and this process.
    pub fn new(name: &str, bytes: usize) -> TextFile {
        Self::build(name, bytes, None)
    }

    /// The same, with one line `marker` (ASCII, no newline, found nowhere
    /// else in the file) starting at the first line start past the middle.
    pub fn with_marker(name: &str, bytes: usize, marker: &str) -> TextFile {
        assert!(
            marker.is_ascii() && !marker.contains('\n') && !UNIT.contains(marker),
            "a marker is one ASCII line found nowhere else: {marker:?}"
        );
        Self::build(name, bytes, Some(marker))
    }

    fn build(name: &str, bytes: usize, marker: Option<&str>) -> TextFile {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-text-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the directory");
        let dir = dir.canonicalize().expect("canonical path");
        let mut text = UNIT.repeat(bytes / UNIT.len() + 1);
        let marker_at = marker.map(|marker| {
            let middle = bytes / 2;
            let at = text.as_bytes()[middle..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| middle + i + 1)
                .expect("a line ends past the middle");
            assert!(
                at + marker.len() < bytes,
                "{bytes} bytes leave no room for the marker"
            );
            text.insert_str(at, &format!("{marker}\n"));
            at
        });
        while text.len() > bytes {
            text.pop();
        }
        let path = dir.join("big.txt");
        std::fs::write(&path, &text).expect("write the file");
        TextFile {
            dir,
            path,
            bytes: text.len(),
            marker_at,
        }
    }
}

impl Drop for TextFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
