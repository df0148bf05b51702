// Package words holds the small helpers of modulo's messages.
package words

// Plural returns one when n is 1, else many: "1 schedule", "2 schedules".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
