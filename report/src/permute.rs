//! Putting items in an order computed apart (perf's tree walks).

/// `entries` in `order` (a permutation of their indexes).
pub(crate) fn permute<T>(mut entries: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut placed = vec![false; entries.len()];
    let is_permutation = order.len() == entries.len()
        && order
            .iter()
            .all(|&i| i < placed.len() && !std::mem::replace(&mut placed[i], true));
    if !is_permutation {
        let mut slots: Vec<Option<T>> = entries.into_iter().map(Some).collect();
        return order
            .iter()
            .filter_map(|&i| slots.get_mut(i)?.take())
            .collect();
    }
    // In place, one cycle at a time: a second vector of entries would be
    // the report's peak memory.
    placed.fill(false);
    for start in 0..order.len() {
        let mut at = start;
        while !placed[at] {
            placed[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            entries.swap(at, from);
            at = from;
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permutes_in_place_like_taking_each_index_in_turn() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in [0usize, 1, 2, 3, 7, 64, 501] {
            let mut order: Vec<usize> = (0..len).collect();
            for i in (1..len).rev() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                order.swap(i, seed as usize % (i + 1));
            }
            let items: Vec<String> = (0..len).map(|i| format!("e{i}")).collect();
            let expected: Vec<String> = order.iter().map(|&i| items[i].clone()).collect();
            assert_eq!(permute(items, &order), expected, "order {order:?}");
        }
        // Not a permutation (an index twice, one out of range): the indexes
        // that exist, in order, once each.
        let items = vec!['a', 'b', 'c'];
        assert_eq!(permute(items, &[2, 2, 9, 0]), vec!['c', 'a']);
    }
}
