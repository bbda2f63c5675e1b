// "Did you mean": the known names nearest a mistyped one, for error messages. Weight names
// differ in a layer number or one word, so edit distance ranks them well.

/** up to `k` of `names` nearest `name` by edit distance (ties in name order) */
export function closeNames(name: string, names: readonly string[], k = 5): string[] {
  return names
    .map((n) => ({ n, d: editDistance(name, n) }))
    .sort((a, b) => a.d - b.d || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0))
    .slice(0, k)
    .map((x) => x.n);
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
