//! Torn writes: a store file or its write-ahead log cut at seeded random offsets. Either the runs
//! committed before are intact, or the open says `store.corrupt`; never a panic, never a run
//! that is half there.

use crate::support::{block_on, intent, started};
use a2aflow_kernel::journal::{JournalRecord, RunStore};
use a2aflow_model::ErrorCode;
use a2aflow_store_sqlite::SqliteStore;
use std::path::{Path, PathBuf};

/// A small seeded generator (xorshift64*), so every failure can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

const RUNS_BEFORE: usize = 3;
const RECORDS: usize = 20;

fn records(run: &str) -> Vec<JournalRecord> {
    (0..RECORDS)
        .map(|n| intent(&format!("{run}:a:0"), n))
        .collect()
}

/// Runs `before-0..2` committed and checkpointed into the main file; then, with the store still
/// open (as a crashed host leaves it), run `late` appended one record per transaction, only in
/// the WAL. Returns copies of the main file and of the WAL as they were on disk.
fn build(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let path = dir.join("runs.db");
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        for r in 0..RUNS_BEFORE {
            let id = format!("before-{r}");
            store.create_run(started(&id, r as u64)).await.unwrap();
            store.append_batch(&id, records(&id)).await.unwrap();
        }
        store.close().await;
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(started("late", 9)).await.unwrap();
        for r in records("late") {
            store.append("late", r).await.unwrap();
        }
        let db = std::fs::read(&path).unwrap();
        let wal = std::fs::read(format!("{}-wal", path.display())).unwrap();
        store.close().await;
        (db, wal)
    })
}

fn case(dir: &Path, n: usize, db: &[u8], wal: Option<&[u8]>) -> PathBuf {
    let path = dir.join(format!("case-{n}.db"));
    std::fs::write(&path, db).unwrap();
    if let Some(wal) = wal {
        std::fs::write(format!("{}-wal", path.display()), wal).unwrap();
    }
    path
}

/// Opens a torn copy: `Ok(())` when it opened and every run written before is intact and the
/// late run is absent or a prefix of what was appended; the error code otherwise.
fn check(path: &Path, late_may_be_partial: bool) -> Result<(), ErrorCode> {
    block_on(async {
        let store = SqliteStore::open(path).await.map_err(|e| e.code)?;
        for r in 0..RUNS_BEFORE {
            let id = format!("before-{r}");
            let journal = store.load(&id).await.map_err(|e| e.code)?;
            let got: Vec<_> = journal.entries[1..]
                .iter()
                .map(|e| e.record.clone())
                .collect();
            assert_eq!(got, records(&id), "{id} lost records in {}", path.display());
        }
        match store.load("late").await {
            Ok(journal) => {
                let got: Vec<_> = journal.entries[1..]
                    .iter()
                    .map(|e| e.record.clone())
                    .collect();
                let all = records("late");
                assert!(late_may_be_partial || got == all, "late run changed");
                assert_eq!(got[..], all[..got.len()], "late run is not a prefix");
            }
            Err(e) if e.is(ErrorCode::StoreUnknownExecution) => {}
            Err(e) => return Err(e.code),
        }
        store.close().await;
        Ok(())
    })
}

#[test]
fn a_torn_write_ahead_log_keeps_the_runs_committed_before() {
    let dir = tempfile::tempdir().unwrap();
    let (db, wal) = build(dir.path());
    assert!(
        wal.len() > 4096,
        "the late run is in the WAL ({} bytes)",
        wal.len()
    );
    let mut rng = Rng(0x5eed_0001);
    let mut opened = 0;
    for n in 0..40 {
        let cut = rng.below(wal.len() as u64) as usize;
        let path = case(dir.path(), n, &db, Some(&wal[..cut]));
        match check(&path, true) {
            Ok(()) => opened += 1,
            Err(code) => assert_eq!(code, ErrorCode::StoreCorrupt, "cut at {cut}"),
        }
    }
    // A cut log only loses its tail: SQLite's frame checksums stop recovery at the cut.
    assert_eq!(opened, 40);
}

#[test]
fn a_torn_store_file_is_reported_corrupt_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = build(dir.path());
    let mut rng = Rng(0x5eed_0002);
    for n in 0..40 {
        let cut = rng.below(db.len() as u64) as usize;
        let path = case(dir.path(), n, &db[..cut], None);
        assert_eq!(
            check(&path, false),
            Err(ErrorCode::StoreCorrupt),
            "cut at {cut}"
        );
        assert!(
            std::fs::read(&path).unwrap() == db[..cut],
            "cut at {cut}: file changed"
        );
    }
}
