//! `stem()` against R: every expected text below was worked out by hand from the algorithm
//! of R's src/library/graphics/src/stem.c (scale choice, C integer truncation, the decimal
//! point line, leaves cut at width − 12, `+N` past width), not by running this code. The
//! first case is also the output R prints for it in a published notebook.

use wblab_report::terminal::log2hist::print_log2_slots;
use wblab_report::terminal::stem::{stem, DEFAULT_ATOM, DEFAULT_WIDTH};

fn r_stem(x: &[f64]) -> String {
    stem(x, 1.0, DEFAULT_WIDTH, DEFAULT_ATOM)
}

/// 19 exam grades. r = 44 → c = 1, mm = 1, k = 3·1 + 2 − 150/69 = 3 → mu = 10 (stems of ten);
/// pdigits = 1 − floor(log10(1) + 0.5) = 1 → "1 digit(s) to the right".
#[test]
fn grades_stems_of_ten() {
    let grades = [
        76.0, 74.0, 82.0, 96.0, 66.0, 76.0, 78.0, 72.0, 52.0, 68.0, 86.0, 84.0, 62.0, 76.0, 78.0, 92.0, 82.0, 74.0, 88.0,
    ];
    let want = "\n  The decimal point is 1 digit(s) to the right of the |\n\n  5 | 2\n  6 | 268\n  7 | 24466688\n  8 | 22468\n  9 | 26\n\n";
    assert_eq!(r_stem(&grades), want);
}

/// Latencies in seconds, n = 7. r = 0.6 → c = 10^(11 − 9) = 100; mm = (int)(60/25) = 2;
/// k = 3·2 + 2 − 150/57 = 6 → mu = 20: each line holds two stems' leaves (0.05, 0.1 and 0.12
/// are all on the "0" line: leaves 5, 0, 2). pdigits = 1 − 2 = −1 → "to the left".
#[test]
fn two_stems_per_line_decimal_point_to_the_left() {
    let x = [0.05, 0.1, 0.12, 0.2, 0.33, 0.41, 0.65];
    let want = "\n  The decimal point is 1 digit(s) to the left of the |\n\n  0 | 502\n  2 | 03\n  4 | 1\n  6 | 5\n\n";
    assert_eq!(r_stem(&x), want);
}

/// r = 12 → c = 1, mm = 0, k = 0 + 2 − 2 = 0 → mu = 5: every stem is split into a 0–4 and a
/// 5–9 line.
#[test]
fn split_stems_of_five() {
    let x = [10.0, 11.0, 12.0, 15.0, 17.0, 21.0, 22.0];
    let want = "\n  The decimal point is 1 digit(s) to the right of the |\n\n  1 | 012\n  1 | 57\n  2 | 12\n\n";
    assert_eq!(r_stem(&x), want);
}

/// Negative values: lo = −20 → ldigits = 2, so stems are two wide; the stem between −10 and 0
/// prints as "-0"; leaves of negative stems come in ascending order of x (−7, −3, −1 → 731);
/// xi = (int)(x·c − 0.5) truncates towards zero.
#[test]
fn negative_values_and_minus_zero() {
    let x = [-12.0, -7.0, -3.0, -1.0, 0.0, 2.0, 4.0, 9.0, 15.0];
    let want = "\n  The decimal point is 1 digit(s) to the right of the |\n\n  -1 | 2\n  -0 | 731\n   0 | 0249\n   1 | 5\n\n";
    assert_eq!(r_stem(&x), want);
}

/// n = 105 > 100: k = 3·mm + 2 with mm = (int)(25.00000001/25) = 1 → k = 5 → c·10 = 10 and
/// mu = 20; pdigits = 0 → "at the |". The 100 zeros overflow: 68 (= width − 12) leaves are
/// printed, then "+20" (= 100 − width), as in the 2007 lstat plot's "+1737". Empty lines keep
/// their trailing blank.
#[test]
fn overflow_past_width_80() {
    let mut x = vec![0.0; 100];
    x.extend([5.0, 10.0, 15.0, 20.0, 25.0]);
    let zeros = "0".repeat(68);
    let want = format!(
        "\n  The decimal point is at the |\n\n   0 | {zeros}+20\n   2 | \n   4 | 0\n   6 | \n   8 | \n  10 | 0\n  12 | \n  14 | 0\n  16 | \n  18 | \n  20 | 0\n  22 | \n  24 | 0\n\n"
    );
    assert_eq!(r_stem(&x), want);
}

/// All values equal: r = atom + |x|, c = 10^(11 − (int)(log10(3) + 10)) = 10, k = 2, mu = 10.
#[test]
fn constant_input() {
    assert_eq!(r_stem(&[3.0, 3.0, 3.0]), "\n  The decimal point is at the |\n\n  3 | 000\n\n");
}

/// R prints nothing for a single value (stem_leaf returns before printing when n <= 1), and
/// drops non-finite values first.
#[test]
fn one_value_prints_nothing() {
    assert_eq!(r_stem(&[42.0]), "");
    assert_eq!(r_stem(&[42.0, f64::NAN, f64::INFINITY]), "");
}

/// A narrower width moves both cut-offs: width 20 prints 8 leaves and counts past 20.
#[test]
fn width_parameter() {
    let x: Vec<f64> = std::iter::repeat_n(10.0, 30).chain([11.0, 12.0]).collect();
    // 30 tens, 11, 12: n = 32, r = 2 → c = 10^(11 − 10) = 10, mm = (int)(20/25) = 0,
    // k = 0 + 2 − 150/82 = 1 → c = 100, mu = 20. lo = floor(1000/20)·20 = 1000, stem 100;
    // hi = 1020. x = 10 → xi = 1000 → leaf 0 (30 of them); 11 → 1100 ≥ 1020: next lines.
    // pdigits = 1 − 2 = −1. hdigits = floor(log10(1200)) = 3.
    let got = stem(&x, 1.0, 20, DEFAULT_ATOM);
    let want = "\n  The decimal point is 1 digit(s) to the left of the |\n\n  100 | 00000000+10\n  102 | \n  104 | \n  106 | \n  108 | \n  110 | 0\n  112 | \n  114 | \n  116 | \n  118 | \n  120 | 0\n\n";
    assert_eq!(got, want);
}

/// bcc's log2 layout: "%10d -> %-10d : %-8d |%-40s|", slot 1 printed as "0 -> 1", stars =
/// 40·count/max rounded down.
#[test]
fn log2_histogram_in_bcc_layout() {
    let mut slots = vec![0u64; 12];
    slots[2] = 1; // 2..3
    slots[7] = 4; // 64..127
    slots[11] = 10; // 1024..2047
    let bar = |n: usize| format!("|{}{}|", "*".repeat(n), " ".repeat(40 - n));
    let want = [
        "     usecs               : count     distribution".to_string(),
        format!("         0 -> 1          : 0        {}", bar(0)),
        format!("         2 -> 3          : 1        {}", bar(4)),
        format!("         4 -> 7          : 0        {}", bar(0)),
        format!("         8 -> 15         : 0        {}", bar(0)),
        format!("        16 -> 31         : 0        {}", bar(0)),
        format!("        32 -> 63         : 0        {}", bar(0)),
        format!("        64 -> 127        : 4        {}", bar(16)),
        format!("       128 -> 255        : 0        {}", bar(0)),
        format!("       256 -> 511        : 0        {}", bar(0)),
        format!("       512 -> 1023       : 0        {}", bar(0)),
        format!("      1024 -> 2047       : 10       {}", bar(40)),
    ]
    .join("\n")
        + "\n";
    assert_eq!(print_log2_slots(&slots, "usecs"), want);
    assert_eq!(print_log2_slots(&[0, 0, 0], "usecs"), "");
}
