// Package plural writes counts with their nouns for people to read:
// "1 item", "2 items", "0 retries".
package plural

import "strconv"

// Count is n followed by the noun's singular for 1 and its plural
// otherwise. The plural is the singular with "s" added, or with a
// consonant's "y" turned into "ies" (retry, retries); give it as a third
// argument where neither fits.
func Count(n int, singular string, pluralForm ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, singular, pluralForm...)
}

// Noun is the noun alone, singular for 1.
func Noun(n int, singular string, pluralForm ...string) string {
	switch {
	case n == 1 || n == -1:
		return singular
	case len(pluralForm) > 0:
		return pluralForm[0]
	case len(singular) > 1 && singular[len(singular)-1] == 'y' && !isVowel(singular[len(singular)-2]):
		return singular[:len(singular)-1] + "ies"
	}
	return singular + "s"
}

func isVowel(b byte) bool {
	switch b {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
