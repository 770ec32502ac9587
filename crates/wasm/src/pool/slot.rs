//! One pooled file, as the pool sees it: the synchronous subset of a
//! `FileSystemSyncAccessHandle` (positional read and write, size, truncate,
//! flush, close), in physical offsets.

use std::sync::Mutex;

/// How an operation on a pooled file failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotError {
    /// The storage is full (OPFS: a `QuotaExceededError`).
    pub quota: bool,
    pub message: String,
}

impl SlotError {
    pub fn io(message: impl Into<String>) -> Self {
        SlotError { quota: false, message: message.into() }
    }
}

/// A pre-opened file the pool hands out. All calls are synchronous.
pub trait SlotFile: Send + Sync + 'static {
    /// Reads up to `buf.len()` bytes at `at`; fewer only at the end.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize, SlotError>;
    /// Writes all of `data` at `at`, extending the file with zeros if needed.
    fn write_at(&self, at: u64, data: &[u8]) -> Result<(), SlotError>;
    fn size(&self) -> Result<u64, SlotError>;
    fn truncate(&self, len: u64) -> Result<(), SlotError>;
    /// Makes every byte written so far durable.
    fn flush(&self) -> Result<(), SlotError>;
    /// Releases the file; every later call fails. Closing twice is fine.
    fn close(&self);
}

/// A pooled file held in memory: the native tests of the pool run on it.
#[derive(Default)]
pub struct MemSlot {
    state: Mutex<MemSlotState>,
}

#[derive(Default)]
struct MemSlotState {
    data: Vec<u8>,
    /// The bytes as of the last flush: what a crash would leave.
    durable: Vec<u8>,
    closed: bool,
    /// Writes that succeed before every write fails with a quota error.
    quota_writes_left: Option<usize>,
}

impl MemSlot {
    /// A file whose bytes (live and durable) are `data`.
    pub fn with_bytes(data: Vec<u8>) -> Self {
        MemSlot { state: Mutex::new(MemSlotState { durable: data.clone(), data, ..MemSlotState::default() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemSlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes a crash would leave: those of the last flush.
    pub fn durable_bytes(&self) -> Vec<u8> {
        self.lock().durable.clone()
    }

    /// Every byte, flushed or not.
    pub fn live_bytes(&self) -> Vec<u8> {
        self.lock().data.clone()
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// After `n` more successful writes, every write fails as if the
    /// storage quota were used up.
    pub fn fail_writes_after(&self, n: usize) {
        self.lock().quota_writes_left = Some(n);
    }

    fn open(&self) -> Result<std::sync::MutexGuard<'_, MemSlotState>, SlotError> {
        let st = self.lock();
        if st.closed {
            return Err(SlotError::io("the access handle is closed"));
        }
        Ok(st)
    }
}

impl SlotFile for MemSlot {
    fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize, SlotError> {
        let st = self.open()?;
        let Ok(at) = usize::try_from(at) else {
            return Ok(0);
        };
        if at >= st.data.len() {
            return Ok(0);
        }
        let n = buf.len().min(st.data.len() - at);
        buf[..n].copy_from_slice(&st.data[at..at + n]);
        Ok(n)
    }

    fn write_at(&self, at: u64, data: &[u8]) -> Result<(), SlotError> {
        let mut st = self.open()?;
        if let Some(left) = st.quota_writes_left.as_mut() {
            if *left == 0 {
                return Err(SlotError {
                    quota: true,
                    message: "QuotaExceededError: the storage quota is used up".into(),
                });
            }
            *left -= 1;
        }
        let at = usize::try_from(at).map_err(|_| SlotError::io("offset too large"))?;
        let end = at + data.len();
        if st.data.len() < end {
            st.data.resize(end, 0);
        }
        st.data[at..end].copy_from_slice(data);
        Ok(())
    }

    fn size(&self) -> Result<u64, SlotError> {
        Ok(self.open()?.data.len() as u64)
    }

    fn truncate(&self, len: u64) -> Result<(), SlotError> {
        let len = usize::try_from(len).map_err(|_| SlotError::io("length too large"))?;
        self.open()?.data.resize(len, 0);
        Ok(())
    }

    fn flush(&self) -> Result<(), SlotError> {
        let mut st = self.open()?;
        st.durable = st.data.clone();
        Ok(())
    }

    fn close(&self) {
        self.lock().closed = true;
    }
}

/// Shared ownership of a pooled file (the tests keep a second handle on
/// each `MemSlot` to look at what a crash would leave).
impl<T: SlotFile> SlotFile for std::sync::Arc<T> {
    fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize, SlotError> {
        (**self).read_at(at, buf)
    }
    fn write_at(&self, at: u64, data: &[u8]) -> Result<(), SlotError> {
        (**self).write_at(at, data)
    }
    fn size(&self) -> Result<u64, SlotError> {
        (**self).size()
    }
    fn truncate(&self, len: u64) -> Result<(), SlotError> {
        (**self).truncate(len)
    }
    fn flush(&self) -> Result<(), SlotError> {
        (**self).flush()
    }
    fn close(&self) {
        (**self).close()
    }
}
