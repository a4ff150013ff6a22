package anthropic

// Test helpers of the Anthropic adapter's own tests; the fakes every
// adapter shares are in provider/providertest.

import "github.com/toolgate/toolgate/provider/providertest"

const (
	testLink = providertest.Link
	testStep = providertest.Step
	waitText = providertest.WaitText
)
