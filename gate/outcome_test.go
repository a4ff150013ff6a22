package gate

// Ran is a release's sentence as the tests of the release path build it:
// the person's part, then ". " and the reply when the app answered 2xx,
// else ", but " and a clause. The gate stores outcomes as data (Outcome)
// and renders these sentences from it; the tests compare what the model
// read with sentences built this way, independently of Outcome.sentence.
type Ran struct {
	OK   bool
	Text string
}

// After joins the person's part and the release's text.
func (r Ran) After(person string) string {
	if r.OK {
		return person + ". " + r.Text
	}
	return person + ", but " + r.Text
}

// outcomeUnchecked is the sentence of uncheckedOutcome.
func outcomeUnchecked(why string) string {
	return uncheckedOutcome(why).sentence("")
}
