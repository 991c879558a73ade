//! The served-task index: which runs this server started, for which agent, in which context.
//! The run store keeps the runs; this file keeps what A2A adds to them (the task's context), so
//! that after a restart GetTask and ListTasks still answer for the runs the store holds.
//!
//! One JSON line per task, appended and synced before the run starts. A line that cannot be
//! read is an error when the server starts, never skipped. The lines of tasks the server no
//! longer answers for (finished tasks dropped past the limit kept) are compacted away from time
//! to time ([`IndexFile::compact`]), so the file stays as bounded as the served tasks in memory.

use crate::record::TaskMeta;
use a2aflow::model::{ErrorCode, Failure};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The longest index file read back (64 MiB): a bigger file is refused, not read.
const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;

/// An append-only index file.
#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl IndexFile {
    /// Opens (or creates) the index at `path` and reads back every task it names.
    pub(crate) fn open(path: &Path) -> Result<(IndexFile, Vec<TaskMeta>), Failure> {
        let tasks = read_all(path)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| index_error(path, &format!("cannot open it for appending: {e}")))?;
        Ok((
            IndexFile {
                path: path.to_owned(),
                file: Mutex::new(file),
            },
            tasks,
        ))
    }

    /// Appends `meta` and syncs it to disk.
    pub(crate) fn append(&self, meta: &TaskMeta) -> Result<(), Failure> {
        let mut line = serde_json::to_vec(meta)
            .map_err(|e| index_error(&self.path, &format!("cannot encode a task: {e}")))?;
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|e| index_error(&self.path, &format!("cannot append a task: {e}")))
    }

    /// Rewrites the index without the lines of the tasks in `dropped`, atomically (a new file
    /// synced, then renamed over the old one): a crash leaves the old file or the new one.
    /// Appends wait meanwhile, so a task appended while the index is compacted is kept. A line
    /// that cannot be read is kept as it is (the next start refuses it, as it would have).
    pub(crate) fn compact(&self, dropped: &HashSet<String>) -> Result<(), Failure> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Named {
            execution_id: String,
        }
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |what: &str, e: std::io::Error| {
            index_error(&self.path, &format!("cannot compact it ({what}): {e}"))
        };
        let text = std::fs::read_to_string(&self.path).map_err(|e| fail("read", e))?;
        let mut kept = String::with_capacity(text.len());
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let gone = serde_json::from_str::<Named>(line)
                .is_ok_and(|named| dropped.contains(&named.execution_id));
            if !gone {
                kept.push_str(line);
                kept.push('\n');
            }
        }
        let mut fresh = self.path.clone().into_os_string();
        fresh.push(".compacting");
        let fresh = PathBuf::from(fresh);
        std::fs::write(&fresh, kept.as_bytes()).map_err(|e| fail("write", e))?;
        std::fs::File::open(&fresh)
            .and_then(|f| f.sync_all())
            .map_err(|e| fail("sync", e))?;
        std::fs::rename(&fresh, &self.path).map_err(|e| fail("rename", e))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The rename itself reaches the disk with its directory (best effort: not every
            // platform opens a directory).
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        *file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| fail("reopen", e))?;
        Ok(())
    }
}

fn read_all(path: &Path) -> Result<Vec<TaskMeta>, Failure> {
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(index_error(path, &format!("cannot read it: {e}"))),
    };
    if len > MAX_INDEX_BYTES {
        return Err(index_error(
            path,
            &format!("it is {len} bytes, more than the {MAX_INDEX_BYTES} bytes read back"),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| index_error(path, &format!("cannot read it: {e}")))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| index_error(path, &format!("line {} is not a task: {e}", i + 1)))
        })
        .collect()
}

fn index_error(path: &Path, problem: &str) -> Failure {
    Failure::new(
        ErrorCode::StoreCorrupt,
        format!(
            "the served-task index {} is unusable: {problem}",
            path.display()
        ),
    )
    .with_detail("path", path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_read_back_and_a_bad_line_is_refused() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let path = dir.path().join("served.jsonl");
        let meta = TaskMeta {
            execution_id: "e1".into(),
            context_id: "c1".into(),
            workflow: "w".into(),
            workflow_id: "wid".into(),
            created_ms: 5,
            caller: Some("alice".into()),
            lineage: None,
        };
        let opened = IndexFile::open(&path).map(|(index, _)| index.append(&meta));
        assert!(matches!(opened, Ok(Ok(()))));
        let again = IndexFile::open(&path).map(|(_, tasks)| tasks);
        assert_eq!(again.ok(), Some(vec![meta.clone()]));
        // Compacted: the dropped task's line goes, the others (and one appended after) stay.
        let other = TaskMeta {
            execution_id: "e2".into(),
            ..meta.clone()
        };
        let later = TaskMeta {
            execution_id: "e3".into(),
            ..meta.clone()
        };
        let (index, _) = IndexFile::open(&path).unwrap();
        index.append(&other).unwrap();
        index.compact(&HashSet::from(["e1".to_owned()])).unwrap();
        index.append(&later).unwrap();
        let again = IndexFile::open(&path).map(|(_, tasks)| tasks);
        assert_eq!(again.ok(), Some(vec![other, later]));
        std::fs::write(&path, "{not json}\n").ok();
        let bad = IndexFile::open(&path).err().map(|f| f.code.to_string());
        assert_eq!(bad.as_deref(), Some("store.corrupt"));
    }
}
