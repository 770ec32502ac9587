use super::*;
use crate::format::key::{internal_key, ValueType};
use crate::version::FileMeta;

const MB: u64 = 1 << 20;

fn opts() -> PickerOptions {
    PickerOptions {
        level0_file_num_compaction_trigger: 4,
        max_bytes_for_level_base: 16 * MB,
        max_bytes_for_level_multiplier: 10,
        min_l0_move_bytes: MB,
    }
}

fn file(number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMetaData> {
    Arc::new(FileMetaData::new(FileMeta {
        number,
        file_size: size,
        smallest: internal_key(lo.as_bytes(), number, ValueType::Put),
        largest: internal_key(hi.as_bytes(), number, ValueType::Put),
        smallest_seq: number,
        largest_seq: number,
    }))
}

fn version(levels: Vec<(usize, Vec<Arc<FileMetaData>>)>) -> Version {
    let mut v = Version::default();
    for (l, files) in levels {
        v.levels[l] = files;
    }
    v
}

fn no_cursors() -> [Vec<u8>; NUM_LEVELS] {
    Default::default()
}

fn numbers(spec: &CompactionSpec) -> Vec<(usize, u64)> {
    spec.input_numbers()
}

#[test]
fn targets_of_an_empty_or_small_database_put_the_base_at_the_last_level() {
    let t = level_targets(&[0; NUM_LEVELS], &opts());
    assert_eq!(t.base_level, 6);
    assert_eq!(t.bytes[6], 16 * MB);
    let mut sizes = [0; NUM_LEVELS];
    sizes[6] = 150 * MB;
    assert_eq!(level_targets(&sizes, &opts()).base_level, 6);
}

#[test]
fn targets_grow_upward_by_the_multiplier_as_the_last_level_grows() {
    let mut sizes = [0; NUM_LEVELS];
    sizes[6] = 1000 * MB;
    let t = level_targets(&sizes, &opts());
    assert_eq!(t.base_level, 5);
    assert_eq!(t.bytes[6], 1000 * MB);
    assert_eq!(t.bytes[5], 100 * MB);
    assert_eq!(t.bytes[4], 0);
    sizes[6] = 100_000 * MB;
    let t = level_targets(&sizes, &opts());
    assert_eq!(t.base_level, 3);
    assert_eq!(t.bytes[3], 100 * MB);
}

#[test]
fn too_few_l0_files_do_nothing() {
    let v = version(vec![(0, vec![file(3, "a", "z", MB), file(2, "a", "z", MB), file(1, "a", "z", MB)])]);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::DoNothing));
}

#[test]
fn l0_at_the_trigger_merges_all_of_l0_with_what_it_overlaps_in_the_base_level() {
    let l0 = vec![file(9, "c", "f", MB), file(8, "a", "d", MB), file(7, "e", "g", MB), file(6, "b", "c", MB)];
    let base = vec![file(1, "a", "b", MB), file(2, "c", "d", MB), file(3, "x", "z", MB)];
    let v = version(vec![(0, l0), (6, base)]);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Merge(spec) => {
            assert_eq!(spec.output_level, 6);
            assert_eq!(spec.reason, Reason::L0FileCount);
            assert_eq!(numbers(&spec), vec![(0, 9), (0, 8), (0, 7), (0, 6), (6, 1), (6, 2)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn l0_files_that_overlap_neither_each_other_nor_the_base_level_move_down_unread() {
    // An ascending load: each flush covers the keys after the last one's.
    let l0 = vec![file(9, "g", "h", MB), file(8, "e", "f", MB), file(7, "c", "d", MB), file(6, "a", "b", MB)];
    let base = vec![file(1, "0", "1", MB), file(2, "x", "z", MB)];
    let v = version(vec![(0, l0.clone()), (6, base.clone())]);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Move { from: 0, files, to: 6 } => {
            assert_eq!(files.iter().map(|f| f.number()).collect::<Vec<_>>(), [9, 8, 7, 6]);
        }
        other => panic!("{other:?}"),
    }
    // One L0 file reaching into a base file: all of L0 is merged.
    let reaching = vec![file(1, "0", "1", MB), file(2, "f", "z", MB)];
    let v = version(vec![(0, l0.clone()), (6, reaching)]);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::Merge(spec) if spec.inputs.len() == 2));
    // Two L0 files overlapping each other: merged too.
    let mut overlapping_l0 = l0;
    overlapping_l0[0] = file(9, "a", "a", MB);
    let v = version(vec![(0, overlapping_l0), (6, base.clone())]);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::Merge(spec) if spec.inputs.len() == 1));
    // Small files are merged into fewer, larger ones.
    let small = vec![file(9, "g", "h", MB), file(8, "e", "f", MB / 2), file(7, "c", "d", MB), file(6, "a", "b", MB)];
    let v = version(vec![(0, small), (6, base)]);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::Merge(spec) if spec.inputs.len() == 1));
}

#[test]
fn an_oversized_level_moves_a_file_down_when_nothing_overlaps_it() {
    // L5 over its 100 MB target; its first file overlaps nothing in L6.
    let l5 = vec![file(10, "a", "b", 60 * MB), file(11, "m", "n", 60 * MB)];
    let l6 = vec![file(1, "c", "l", 1000 * MB)];
    let v = version(vec![(5, l5), (6, l6)]);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Move { from: 5, files, to: 6 } => {
            assert_eq!(files.iter().map(|f| f.number()).collect::<Vec<_>>(), [10])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_cursor_walks_a_level_round_robin_and_merges_overlaps() {
    let l5 = vec![file(10, "a", "b", 60 * MB), file(11, "m", "n", 60 * MB)];
    let l6 = vec![file(1, "c", "l", 500 * MB), file(2, "l", "o", 500 * MB)];
    let v = version(vec![(5, l5), (6, l6)]);
    let mut cursors = no_cursors();
    cursors[5] = b"b".to_vec();
    match choose(&v, &opts(), &cursors) {
        Choice::Merge(spec) => {
            assert_eq!(numbers(&spec), vec![(5, 11), (6, 2)]);
            assert_eq!(spec.reason, Reason::LevelSize);
        }
        other => panic!("{other:?}"),
    }
    // Past the last file the cursor wraps to the first.
    cursors[5] = b"zz".to_vec();
    assert!(matches!(choose(&v, &opts(), &cursors), Choice::Move { files, .. } if files[0].number() == 10));
}

#[test]
fn data_above_the_base_level_is_drained_first() {
    let v = version(vec![(2, vec![file(5, "a", "c", MB)]), (6, vec![file(1, "a", "z", 10 * MB)])]);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Merge(spec) => panic!("want a move of the lone L2 file, got {spec:?}"),
        Choice::Move { from, to, .. } => assert_eq!((from, to), (2, 3)),
        Choice::DoNothing => panic!("L2 holds data above the base level and must drain"),
    }
}

#[test]
fn l0_never_compacts_past_data_above_the_base_level() {
    // L6 alone is small: the base level is L6. L3 holds data (ingested
    // there, or left by an old base level) that is older than L0's.
    let l0 = vec![file(9, "x", "y", MB), file(8, "a", "b", MB), file(7, "c", "d", MB), file(6, "e", "f", MB)];
    let v = version(vec![(0, l0.clone()), (3, vec![file(4, "m", "n", MB)]), (6, vec![file(1, "a", "z", 10 * MB)])]);
    let t = level_targets(&level_bytes(&v), &opts());
    assert_eq!(t.base_level, 6);
    assert_eq!(l0_output_level(&v, &t), 3);
    for choice in [manual(&v, &opts(), 0, None, None), fewer_files(&v, &opts())] {
        match choice {
            Choice::Merge(spec) => assert_eq!(spec.output_level, 3),
            other => panic!("{other:?}"),
        }
    }
    // With nothing above the base level, L0 goes into it.
    let v = version(vec![(0, l0), (6, vec![file(1, "a", "z", 10 * MB)])]);
    assert_eq!(l0_output_level(&v, &level_targets(&level_bytes(&v), &opts())), 6);
    match manual(&v, &opts(), 0, None, None) {
        Choice::Merge(spec) => assert_eq!(spec.output_level, 6),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_level_within_target_does_nothing() {
    let v = version(vec![(6, vec![file(1, "a", "z", 10 * MB)]), (0, vec![file(2, "a", "b", MB)])]);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::DoNothing));
}

#[test]
fn manual_compaction_takes_all_of_l0_and_never_moves() {
    let v = version(vec![
        (0, vec![file(9, "x", "y", MB), file(8, "a", "b", MB)]),
        (5, vec![file(4, "a", "c", MB)]),
        (6, vec![file(1, "a", "z", 100 * MB)]),
    ]);
    // Into L5, not the base level L6: L5's data is older than L0's, and L0
    // compacted under it would be hidden by it (see l0_output_level).
    match manual(&v, &opts(), 0, Some(b"a"), Some(b"b")) {
        Choice::Merge(spec) => {
            assert_eq!(spec.output_level, 5);
            assert_eq!(numbers(&spec), vec![(0, 9), (0, 8), (5, 4)]);
        }
        other => panic!("{other:?}"),
    }
    // A lone file with nothing below is rewritten, not moved.
    match manual(&v, &opts(), 5, None, None) {
        Choice::Merge(spec) => assert_eq!(numbers(&spec), vec![(5, 4), (6, 1)]),
        other => panic!("{other:?}"),
    }
    assert!(matches!(manual(&v, &opts(), 5, Some(b"d"), None), Choice::DoNothing));
    match manual(&v, &opts(), 6, None, None) {
        Choice::Merge(spec) => assert_eq!((numbers(&spec), spec.output_level), (vec![(6, 1)], 6)),
        other => panic!("the last level compacts into itself: {other:?}"),
    }
}

#[test]
fn bottommost_means_nothing_below_overlaps() {
    let v = version(vec![(5, vec![file(4, "a", "c", MB)]), (6, vec![file(1, "m", "z", MB)])]);
    assert!(is_bottommost(&v, 5, b"a", b"c"));
    assert!(!is_bottommost(&v, 5, b"a", b"n"));
    assert!(is_bottommost(&v, 6, b"a", b"z"));
}

/// Uses up `f`'s allowance of lookups searched in vain.
fn read_in_vain(f: &FileMetaData) {
    while !f.wants_read_compaction() {
        f.charge_reads(16);
    }
}

#[test]
fn a_file_charged_up_is_not_compacted_before_it_passes_its_allowance() {
    // L5's target is 50 MiB: no size-triggered work.
    let l5 = file(1, "a", "z", 30 * MB);
    let l6 = file(2, "a", "z", 500 * MB);
    let v = version(vec![(5, vec![l5.clone()]), (6, vec![l6])]);
    // 30 MiB allows 1,920 lookups: 119 charges of 16 are not enough.
    for _ in 0..119 {
        assert!(!l5.charge_reads(16));
    }
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::DoNothing));
    assert!(l5.charge_reads(16), "the charge that uses the allowance up says so");
    assert!(!l5.charge_reads(16), "and only that one");
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Merge(spec) => {
            assert_eq!(spec.reason, Reason::ReadTriggered);
            assert_eq!(numbers(&spec), vec![(5, 1), (6, 2)]);
            assert_eq!(spec.output_level, 6);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn small_files_are_allowed_a_hundred_lookups() {
    let f = file(1, "a", "b", 1000);
    for _ in 0..6 {
        assert!(!f.charge_reads(16));
    }
    assert!(f.charge_reads(16), "96 + 16 passes 100");
}

#[test]
fn a_read_triggered_l0_file_compacts_all_of_l0_into_the_base_level() {
    let (a, b) = (file(4, "a", "m", MB), file(3, "k", "z", MB));
    let base = file(1, "a", "z", 10 * MB);
    let v = version(vec![(0, vec![a, b.clone()]), (6, vec![base])]);
    read_in_vain(&b);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Merge(spec) => {
            assert_eq!(spec.reason, Reason::ReadTriggered);
            assert_eq!(numbers(&spec), vec![(0, 4), (0, 3), (6, 1)]);
            assert_eq!(spec.output_level, 6);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn size_triggered_work_comes_before_read_triggered_work() {
    let l0: Vec<_> = (10..14).map(|n| file(n, "a", "z", MB)).collect();
    let l5 = file(2, "c", "d", 20 * MB);
    let l6 = file(1, "a", "z", 500 * MB);
    let v = version(vec![(0, l0), (5, vec![l5.clone()]), (6, vec![l6])]);
    read_in_vain(&l5);
    match choose(&v, &opts(), &no_cursors()) {
        Choice::Merge(spec) => assert_eq!(spec.reason, Reason::L0FileCount),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_read_triggered_file_with_nothing_below_it_is_left_alone() {
    // Moving it down would spare no lookup.
    let l5 = file(3, "a", "c", MB);
    let l6 = file(1, "x", "z", 500 * MB);
    let v = version(vec![(5, vec![l5.clone()]), (6, vec![l6])]);
    read_in_vain(&l5);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::DoNothing), "nothing of L6 overlaps a..c");
    // Last-level files have nothing below them at all.
    let last = file(5, "a", "z", 10 * MB);
    let v = version(vec![(6, vec![last.clone()])]);
    read_in_vain(&last);
    assert!(matches!(choose(&v, &opts(), &no_cursors()), Choice::DoNothing));
}

#[test]
fn short_of_files_all_of_l0_merges_with_its_overlaps_even_where_it_could_move() {
    // Disjoint, large L0 files that `choose` would move down unread: one
    // output replaces them and the base-level file they overlap.
    let v = version(vec![
        (0, vec![file(9, "a", "c", 2 * MB), file(8, "d", "f", 2 * MB)]),
        (6, vec![file(3, "e", "g", 4 * MB), file(4, "x", "z", 4 * MB)]),
    ]);
    let Choice::Merge(spec) = fewer_files(&v, &opts()) else { panic!("a merge") };
    assert_eq!(numbers(&spec), vec![(0, 9), (0, 8), (6, 3)]);
    assert_eq!(spec.output_level, 6);
    assert_eq!(spec.reason, Reason::FileCount);
}

#[test]
fn short_of_files_the_cheapest_adjacent_pair_of_a_level_merges_into_that_level() {
    let v = version(vec![
        (0, vec![file(20, "a", "z", MB)]),
        (5, vec![file(10, "a", "b", 8 * MB), file(11, "c", "d", 8 * MB)]),
        (
            6,
            vec![
                file(1, "a", "b", 9 * MB),
                file(2, "c", "d", 3 * MB),
                file(3, "e", "f", 2 * MB),
                file(4, "g", "h", MB),
            ],
        ),
    ]);
    let Choice::Merge(spec) = fewer_files(&v, &opts()) else { panic!("a merge") };
    // (3, 4) writes 3 MB; (2, 3) 5 MB; L5's pair 16 MB.
    assert_eq!(numbers(&spec), vec![(6, 3), (6, 4)]);
    assert_eq!(spec.output_level, 6);
}

#[test]
fn short_of_files_with_no_level_holding_two_files_there_is_nothing_to_do() {
    let v = version(vec![
        (0, vec![file(9, "a", "c", MB)]),
        (5, vec![file(3, "a", "z", MB)]),
        (6, vec![file(1, "a", "z", MB)]),
    ]);
    assert!(matches!(fewer_files(&v, &opts()), Choice::DoNothing));
}
