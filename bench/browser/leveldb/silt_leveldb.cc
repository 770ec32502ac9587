// The C API of LevelDB-in-wasm, for the browser benchmark's LevelDB engine
// (bench/browser/engines/leveldb.js). Built by build.sh; see README.md.
//
// Batch-friendly on purpose: one call from JS does a whole benchmark step
// (a write batch, a get, a multiGet of 32 keys, a seek plus n nexts), so
// LevelDB pays one JS -> wasm crossing per step, whatever the step's size.
//
// ## The checksum
//
// Every engine in the benchmark returns, for each value it reads, the sum of
// its bytes, so that no engine can skip reading values. For the others that
// sum is a JS loop over the Uint8Array the engine returns. Here it is
// computed in C over the bytes where LevelDB holds the value (a block of the
// block cache, a block just read, or the memtable): Get hands it to a
// ValueSink (classic-level's patch 001-value-sink) and a scan reads
// Iterator::value(), so neither copies it. Copying every value out to JS
// first would add a copy that no application would make. Every byte of
// every value is still read.
//
// ## Packed buffers (all integers little-endian u32, which is wasm's order)
//
//   put batch:  count x ( key_len, value_len, key bytes, value bytes )
//   multi get:  count x ( key_len, key bytes )
//
// ## Errors
//
// Functions that can fail return -1 (ldb_get: -2, since -1 means absent;
// ldb_open: null) and leave the reason in ldb_last_error().
//
// ## Background work
//
// Flushes and compactions are queued by SingleThreadEnv (no threads; see
// single_thread_env.h) and run on the caller's stack: at the start of the
// next write, so that a write finds the previous memtable flushed as it
// would with a background thread that keeps up; at ldb_settle, which the
// benchmark times apart (as Silt's idle()); and whenever LevelDB itself
// waits for them (a write stall, or ~DBImpl). Reads never run them: the seek
// compactions they schedule wait for the next write or settle.

#include <emscripten/emscripten.h>
#include <stdint.h>
#include <string.h>

#include <string>

#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/options.h"
#include "leveldb/value_sink.h"
#include "leveldb/write_batch.h"
#include "single_thread_env.h"

namespace {

// Where databases live in emscripten's file system (MEMFS: in memory, lost
// when the module is dropped).
const char kRoot[] = "/leveldb";

std::string last_error;

silt_bench::SingleThreadEnv* Env() { return silt_bench::SingleThreadEnv::Default(); }

// Runs every queued flush and compaction.
void RunBackgroundWork() { Env()->RunPendingWork(); }

// Records why a call failed, for ldb_last_error(). Returns false.
bool Fail(const std::string& what) {
  last_error = what;
  return false;
}

// The sum of the bytes of a value (see "The checksum" above).
uint64_t ByteSum(const char* data, size_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += p[i];
  return sum;
}

// Receives a found value where LevelDB holds it and keeps only its checksum.
struct ChecksumSink : public leveldb::ValueSink {
  uint64_t sum = 0;
  void assign(const char* s, size_t n) override { sum = ByteSum(s, n); }
};

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

// Reads a u32 length and that many bytes from [*pos, end). False when the
// buffer ends first.
bool TakeSlice(const uint8_t** pos, const uint8_t* end, uint32_t len, leveldb::Slice* out) {
  if (static_cast<size_t>(end - *pos) < len) return false;
  *out = leveldb::Slice(reinterpret_cast<const char*>(*pos), len);
  *pos += len;
  return true;
}

bool TakeLength(const uint8_t** pos, const uint8_t* end, uint32_t* len) {
  if (end - *pos < 4) return false;
  *len = LoadU32(*pos);
  *pos += 4;
  return true;
}

// A database name becomes one directory under kRoot.
bool CheckName(const char* name, std::string* path) {
  std::string n = name == nullptr ? "" : name;
  if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos) {
    return Fail("invalid database name '" + n + "': it must be non-empty, without '/', and not '.' or '..'");
  }
  *path = std::string(kRoot) + "/" + n;
  return true;
}

}  // namespace

// An open database and what it owns. Opaque to JS (a pointer).
struct LdbHandle {
  leveldb::DB* db = nullptr;
  leveldb::Cache* cache = nullptr;
  const leveldb::FilterPolicy* filter = nullptr;
  leveldb::WriteBatch batch;  // reused by every put batch: keeps its buffer
  std::string property;       // the last ldb_property result
  std::string out;            // values handed to JavaScript by the *_copy calls

  ~LdbHandle() {
    delete db;  // first: it uses the cache and the filter policy
    delete cache;
    delete filter;
  }
};

extern "C" {

// The reason of the last failure, as UTF-8; valid until the next failure.
EMSCRIPTEN_KEEPALIVE const char* ldb_last_error() { return last_error.c_str(); }

// Opens the database `name` (created if missing) with a block cache of
// `cache_bytes` (LRU), a bloom filter of `bloom_bits` bits per key (0: no
// filter), `block_size` bytes per data block, `write_buffer_size` bytes per
// memtable, and snappy compression when `snappy` is non-zero. Returns null on
// failure.
EMSCRIPTEN_KEEPALIVE LdbHandle* ldb_open(const char* name, uint32_t cache_bytes, uint32_t bloom_bits,
                                         uint32_t block_size, uint32_t write_buffer_size, uint32_t snappy) {
  std::string path;
  if (!CheckName(name, &path)) return nullptr;
  if (cache_bytes == 0 || block_size == 0 || write_buffer_size == 0) {
    Fail("ldb_open: cache_bytes, block_size and write_buffer_size must be positive");
    return nullptr;
  }
  Env()->CreateDir(kRoot);  // fails when it exists; DB::Open reports real problems

  LdbHandle* h = new LdbHandle;
  h->cache = leveldb::NewLRUCache(cache_bytes);
  if (bloom_bits > 0) h->filter = leveldb::NewBloomFilterPolicy(static_cast<int>(bloom_bits));
  leveldb::Options options;
  options.create_if_missing = true;
  options.env = Env();
  options.block_cache = h->cache;
  options.filter_policy = h->filter;
  options.block_size = block_size;
  options.write_buffer_size = write_buffer_size;
  options.compression = snappy != 0 ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  leveldb::Status s = leveldb::DB::Open(options, path, &h->db);
  if (!s.ok()) {
    Fail("opening LevelDB at " + path + ": " + s.ToString());
    delete h;
    return nullptr;
  }
  return h;
}

// Closes the database and frees the handle, which must not be used again.
EMSCRIPTEN_KEEPALIVE void ldb_close(LdbHandle* h) { delete h; }

// Runs the flushes and compactions the writes so far have queued, so that
// reads find the tree as LevelDB's background thread would have left it by
// now. The benchmark's settle step.
EMSCRIPTEN_KEEPALIVE void ldb_settle() { RunBackgroundWork(); }

// Deletes every file of the database `name` and its directory. A database
// that does not exist is not an error. REQUIRES: it is not open.
EMSCRIPTEN_KEEPALIVE int ldb_destroy(const char* name) {
  std::string path;
  if (!CheckName(name, &path)) return -1;
  leveldb::Options options;
  options.env = Env();
  leveldb::Status s = leveldb::DestroyDB(path, options);
  if (!s.ok()) {
    Fail("destroying LevelDB at " + path + ": " + s.ToString());
    return -1;
  }
  return 0;
}

// Writes `count` entries packed in buf[0, len) as one atomic WriteBatch
// (sync off, as LevelDB's default). Returns 0, or -1 when the buffer is
// malformed (nothing written) or the write fails.
EMSCRIPTEN_KEEPALIVE int ldb_put_batch(LdbHandle* h, const uint8_t* buf, uint32_t len, uint32_t count) {
  const uint8_t* pos = buf;
  const uint8_t* end = buf + len;
  h->batch.Clear();
  for (uint32_t i = 0; i < count; i++) {
    uint32_t key_len, value_len;
    leveldb::Slice key, value;
    if (!TakeLength(&pos, end, &key_len) || !TakeLength(&pos, end, &value_len) ||
        !TakeSlice(&pos, end, key_len, &key) || !TakeSlice(&pos, end, value_len, &value)) {
      h->batch.Clear();
      Fail("ldb_put_batch: entry " + std::to_string(i) + " of " + std::to_string(count) + " runs past the " +
           std::to_string(len) + "-byte buffer");
      return -1;
    }
    h->batch.Put(key, value);
  }
  if (pos != end) {
    h->batch.Clear();
    Fail("ldb_put_batch: " + std::to_string(end - pos) + " bytes left over after " + std::to_string(count) +
         " entries");
    return -1;
  }
  RunBackgroundWork();  // see "Background work" above
  leveldb::Status s = h->db->Write(leveldb::WriteOptions(), &h->batch);
  h->batch.Clear();
  if (!s.ok()) {
    Fail("LevelDB write: " + s.ToString());
    return -1;
  }
  return 0;
}

// The checksum of the value of key[0, key_len), -1 when absent, -2 on error.
// A double: exact up to 2^53, far beyond any value's byte sum.
EMSCRIPTEN_KEEPALIVE double ldb_get(LdbHandle* h, const uint8_t* key, uint32_t key_len) {
  ChecksumSink sink;
  leveldb::Status s =
      h->db->Get(leveldb::ReadOptions(), leveldb::Slice(reinterpret_cast<const char*>(key), key_len), &sink);
  if (s.ok()) return static_cast<double>(sink.sum);
  if (s.IsNotFound()) return -1;
  Fail("LevelDB get: " + s.ToString());
  return -2;
}

// The sum of the checksums of the values of `count` keys packed in
// buf[0, len) (absent keys add 0), or -1 on error. LevelDB has no MultiGet:
// this is a loop of Gets, in C, behind one crossing.
EMSCRIPTEN_KEEPALIVE double ldb_multi_get(LdbHandle* h, const uint8_t* buf, uint32_t len, uint32_t count) {
  const uint8_t* pos = buf;
  const uint8_t* end = buf + len;
  leveldb::ReadOptions read_options;
  uint64_t total = 0;
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    uint32_t key_len;
    leveldb::Slice key;
    if (!TakeLength(&pos, end, &key_len) || !TakeSlice(&pos, end, key_len, &key)) {
      ok = Fail("ldb_multi_get: key " + std::to_string(i) + " of " + std::to_string(count) + " runs past the " +
                std::to_string(len) + "-byte buffer");
      break;
    }
    ChecksumSink sink;
    leveldb::Status s = h->db->Get(read_options, key, &sink);
    if (s.ok()) {
      total += sink.sum;
    } else if (!s.IsNotFound()) {
      ok = Fail("LevelDB get (multiGet key " + std::to_string(i) + "): " + s.ToString());
    }
  }
  return ok ? static_cast<double>(total) : -1;
}

// Seeks to the first key >= start[0, start_len) and reads up to `n` entries
// in order: the sum of their values' checksums, or -1 on error.
EMSCRIPTEN_KEEPALIVE double ldb_scan(LdbHandle* h, const uint8_t* start, uint32_t start_len, uint32_t n) {
  leveldb::Iterator* it = h->db->NewIterator(leveldb::ReadOptions());
  uint64_t total = 0;
  uint32_t read = 0;
  for (it->Seek(leveldb::Slice(reinterpret_cast<const char*>(start), start_len)); read < n && it->Valid();
       it->Next(), read++) {
    leveldb::Slice v = it->value();
    total += ByteSum(v.data(), v.size());
  }
  leveldb::Status s = it->status();
  delete it;
  if (!s.ok()) {
    Fail("LevelDB scan: " + s.ToString());
    return -1;
  }
  return static_cast<double>(total);
}

// ## Values handed to JavaScript
//
// The *_copy calls do what a binding that returns values to JavaScript
// does (classic-level in Node, say): the value is copied out of LevelDB
// (Get into a std::string through classic-level's StringValueSink, as its
// binding does, or from the iterator) into h->out, which
// ldb_out() points at, for JavaScript to copy each value into a Uint8Array
// of its own. The benchmark sums those bytes in JavaScript, as for every
// engine but the rows above.

// Where the last *_copy call left its output; valid until the next call.
EMSCRIPTEN_KEEPALIVE const char* ldb_out(LdbHandle* h) { return h->out.data(); }

// The value of key[0, key_len) into h->out: its length, -1 when absent, -2 on error.
EMSCRIPTEN_KEEPALIVE int32_t ldb_get_copy(LdbHandle* h, const uint8_t* key, uint32_t key_len) {
  leveldb::StringValueSink sink(&h->out);
  leveldb::Status s =
      h->db->Get(leveldb::ReadOptions(), leveldb::Slice(reinterpret_cast<const char*>(key), key_len), &sink);
  if (s.ok()) return static_cast<int32_t>(h->out.size());
  if (s.IsNotFound()) return -1;
  Fail("LevelDB get: " + s.ToString());
  return -2;
}

// The values of `count` keys packed in buf[0, len) into h->out, each as
// (i32 length or -1 when absent, bytes). Returns 0, or -1 on error.
EMSCRIPTEN_KEEPALIVE int32_t ldb_multi_get_copy(LdbHandle* h, const uint8_t* buf, uint32_t len, uint32_t count) {
  const uint8_t* pos = buf;
  const uint8_t* end = buf + len;
  leveldb::ReadOptions read_options;
  std::string value;
  leveldb::StringValueSink sink(&value);
  h->out.clear();
  for (uint32_t i = 0; i < count; i++) {
    uint32_t key_len;
    leveldb::Slice key;
    if (!TakeLength(&pos, end, &key_len) || !TakeSlice(&pos, end, key_len, &key)) {
      Fail("ldb_multi_get_copy: key " + std::to_string(i) + " of " + std::to_string(count) + " runs past the " +
           std::to_string(len) + "-byte buffer");
      return -1;
    }
    leveldb::Status s = h->db->Get(read_options, key, &sink);
    int32_t n = -1;
    if (s.ok()) {
      n = static_cast<int32_t>(value.size());
    } else if (!s.IsNotFound()) {
      Fail("LevelDB get (multiGet key " + std::to_string(i) + "): " + s.ToString());
      return -1;
    }
    h->out.append(reinterpret_cast<const char*>(&n), 4);
    if (n >= 0) h->out.append(value);
  }
  return 0;
}

// Seeks to the first key >= start[0, start_len) and copies up to `n`
// entries into h->out, each as (u32 key length, u32 value length, key,
// value). Returns the number of entries, or -1 on error.
EMSCRIPTEN_KEEPALIVE int32_t ldb_scan_copy(LdbHandle* h, const uint8_t* start, uint32_t start_len, uint32_t n) {
  leveldb::Iterator* it = h->db->NewIterator(leveldb::ReadOptions());
  h->out.clear();
  uint32_t read = 0;
  for (it->Seek(leveldb::Slice(reinterpret_cast<const char*>(start), start_len)); read < n && it->Valid();
       it->Next(), read++) {
    leveldb::Slice k = it->key();
    leveldb::Slice v = it->value();
    uint32_t lens[2] = {static_cast<uint32_t>(k.size()), static_cast<uint32_t>(v.size())};
    h->out.append(reinterpret_cast<const char*>(lens), 8);
    h->out.append(k.data(), k.size());
    h->out.append(v.data(), v.size());
  }
  leveldb::Status s = it->status();
  delete it;
  if (!s.ok()) {
    Fail("LevelDB scan: " + s.ToString());
    return -1;
  }
  return static_cast<int32_t>(read);
}

// LevelDB's DB::GetProperty ("leveldb.stats", "leveldb.num-files-at-level<N>",
// "leveldb.sstables", "leveldb.approximate-memory-usage"), as UTF-8 valid
// until the next call on this handle; null for an unknown property.
EMSCRIPTEN_KEEPALIVE const char* ldb_property(LdbHandle* h, const char* name) {
  bool known = h->db->GetProperty(name, &h->property);
  if (!known) {
    Fail(std::string("unknown LevelDB property '") + name + "'");
    return nullptr;
  }
  return h->property.c_str();
}

}  // extern "C"
