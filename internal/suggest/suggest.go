// Package suggest finds what a user probably meant by a name nothing
// knows: the flag or key one slip away.
package suggest

// Closest is the candidate nearest to name by edit distance (letters
// added, dropped, changed or two swapped), when it is near enough to be a
// slip — at most 2 edits, and fewer than a third of the name; "" when none
// is.
func Closest(name string, candidates []string) string {
	best, bestD := "", min(3, len(name)/3+1)
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// Levenshtein's, with a swap of two neighbouring letters one edit.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
