//! One JSON object per benchmark, written by hand (flat, no escaping needs
//! beyond what `esc` does) so the bench has no serializer dependency.

use crate::{Flags, Outcome};

fn esc(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect()
}

/// `"statistics":{...}` with the tickers that moved, or nothing.
pub fn tickers(t: &[(String, u64)]) -> String {
    let body: Vec<String> = t.iter().filter(|(_, v)| *v > 0).map(|(n, v)| format!("\"{}\":{v}", esc(n))).collect();
    format!(",\"statistics\":{{{}}}", body.join(","))
}

#[allow(clippy::too_many_arguments)]
pub fn line(
    engine: &str,
    benchmark: &str,
    f: &Flags,
    out: &Outcome,
    micros: f64,
    ops_sec: f64,
    model: &str,
    cpus: usize,
    date: &str,
) -> String {
    format!(
        concat!(
            "{{\"engine\":\"{}\",\"benchmark\":\"{}\",\"num\":{},\"reads\":{},\"ops\":{},",
            "\"micros_per_op\":{:.4},\"ops_per_sec\":{:.1},\"found\":{},\"bytes\":{},",
            "\"batch_size\":{},\"stride\":{},\"multiread_batched\":{},\"multiread_get\":{},\"seek_nexts\":{},\"range_tombstones\":{},\"explicit_snapshot\":{},\"auto_refresh_iterator_with_snapshot\":{},",
            "\"options\":{{\"key_size\":{},\"value_size\":{},\"compression\":\"{}\",\"bloom_bits\":{},",
            "\"cache_size\":{},\"write_buffer_size\":{},\"target_file_size_base\":{},",
            "\"max_bytes_for_level_base\":{},\"block_size\":{},\"disable_auto_compactions\":{},\"read_triggered_compaction\":{},\"row_cache_size\":{},\"sync\":{}}},",
            "\"machine\":\"{}\",\"cpus\":{},\"date\":\"{}\"}}"
        ),
        esc(engine),
        esc(benchmark),
        f.num,
        f.reads.unwrap_or(f.num),
        out.ops,
        micros,
        ops_sec,
        out.found,
        out.bytes,
        f.batch_size,
        f.multiread_stride,
        f.multiread_batched,
        f.multiread_get,
        f.seek_nexts,
        f.num.checked_div(f.writes_per_range_tombstone).map_or(0, |n| f.max_num_range_tombstones.min(n)),
        f.explicit_snapshot,
        f.auto_refresh_iterator_with_snapshot,
        f.key_size,
        f.value_size,
        esc(&f.compression),
        f.bloom_bits,
        f.cache_size,
        f.write_buffer_size,
        f.target_file_size_base,
        f.max_bytes_for_level_base,
        f.block_size,
        f.disable_auto_compactions,
        f.read_triggered_compaction,
        f.row_cache_size,
        f.sync,
        esc(model),
        cpus,
        esc(date),
    )
}
