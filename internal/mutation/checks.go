package main

// mutations are the security checks of the answer path (gate, pages), the
// MCP front and the store's single-use claim, each with the tests that
// fail without it. A new check gets an entry here and a test that fails
// when the entry removes it.
//
// A check is removed by making its condition false (`false && …`) or by
// dropping the line or part that does the work; the rest of the code stays
// as it is, so each test shows what that one check alone stops.
var mutations = []mutation{
	// The answer path: who may answer which hold, how.
	{
		Name:  "answer: the hold's owner",
		File:  "gate/approvers.go",
		From:  "if who.Owner == h.Owner {\n\t\treturn rights{view: true",
		To:    "if true {\n\t\treturn rights{view: true",
		Tests: []string{"./gate:TestAnotherOwnerInTheTenantIsRefused", "./pages:TestAnswerWithOwnTokenForAnothersHold"},
	},
	{
		Name:  "view: the step's owner",
		File:  "gate/answer.go",
		From:  "if !owner && !slices.ContainsFunc(seen, func(r rights) bool { return r.view }) {",
		To:    "if false && !owner && !slices.ContainsFunc(seen, func(r rights) bool { return r.view }) {",
		Tests: []string{"./gate:TestAnotherOwnerInTheTenantIsRefused", "./pages:TestPageIsShownOnlyToItsPerson"},
	},
	{
		Name:  "identity: the tenant",
		File:  "gate/gate.go",
		From:  "return p.Owner != \"\" && h.Owner == p.Owner && h.Tenant == p.Tenant",
		To:    "return p.Owner != \"\" && h.Owner == p.Owner",
		Tests: []string{"./pages:TestPageIsShownOnlyToItsPerson"},
	},
	{
		Name:  "identity: the tenant, for owners and approvers",
		File:  "gate/approvers.go",
		From:  "who.Owner == \"\" || who.Tenant != h.Tenant {",
		To:    "who.Owner == \"\" {",
		Tests: []string{"./gate:TestAnotherOwnerInTheTenantIsRefused"},
	},
	{
		Name:  "approvers: the role or id",
		File:  "gate/approvers.go",
		From:  "a.Card != nil && a.Approvers.Includes(who.Owner, who.Roles) {",
		To:    "a.Card != nil && a.Approvers != nil {",
		Tests: []string{"./gate:TestWhoMayAnswer"},
	},
	{
		Name:  "approvers: four_eyes",
		File:  "gate/answer.go",
		From:  "if choice == store.AnswerConfirm && !r.confirm {",
		To:    "if false && choice == store.AnswerConfirm && !r.confirm {",
		Tests: []string{"./gate:TestFourEyes"},
	},
	{
		Name:  "hold: a call nobody owns",
		File:  "gate/hold.go",
		From:  "if f.person.Owner == \"\" {\n\t\treturn refuse(\"no_owner\"",
		To:    "if false && f.person.Owner == \"\" {\n\t\treturn refuse(\"no_owner\"",
		Tests: []string{"./gate:TestCallWithoutAnOwnerIsRefused"},
	},
	{
		Name:  "mcp: a caller nobody can name",
		File:  "gate/mcp.go",
		From:  "if p.Owner == \"\" {\n\t\treturn f.mcpRefuse(c, \"no_owner\"",
		To:    "if false && p.Owner == \"\" {\n\t\treturn f.mcpRefuse(c, \"no_owner\"",
		Tests: []string{"./gate:TestMCPCallerNobodyCanNameIsRefused"},
	},
	{
		Name:  "answer: the step id",
		File:  "gate/approvers.go",
		From:  "if h.StepID != stepID || h.Answer == \"refused\"",
		To:    "if h.Answer == \"refused\"",
		Tests: []string{"./gate:TestAnswerNamesTheHoldsOwnStep", "./pages:TestAnswerFitsTheHold"},
	},
	{
		Name:  "answer: the choice fits the hold's kind",
		File:  "gate/answer.go",
		From:  "default:\n\t\treturn HoldView{}, ErrChoice\n\t}\n\tif choice == store.AnswerConfirm && !r.confirm {",
		To:    "default:\n\t}\n\tif choice == store.AnswerConfirm && !r.confirm {",
		Tests: []string{"./gate:TestAnswerFitsTheHoldsKind", "./pages:TestAnswerFitsTheHold"},
	},
	{
		Name:  "submit: a form submitted to a card hold",
		File:  "gate/form.go",
		From:  "if h.Kind != store.KindForm {\n\t\treturn HoldView{}, ErrChoice",
		To:    "if false && h.Kind != store.KindForm {\n\t\treturn HoldView{}, ErrChoice",
		Tests: []string{"./gate:TestAnswerFitsTheHoldsKind", "./pages:TestAnswerFitsTheHold"},
	},
	{
		Name:  "submit: a form after its TTL",
		File:  "gate/form.go",
		From:  "if st := h.StateAt(g.cfg.Now()); st != store.Waiting {",
		To:    "if st := h.StateAt(g.cfg.Now()); false && st != store.Waiting {",
		Tests: []string{"./gate:TestLateAnswersAreRefused", "./pages:TestLateFormAnswerIsRefused"},
	},
	{
		Name:  "pages: the per-hold token",
		File:  "pages/pages.go",
		From:  "if !hmac.Equal([]byte(a.Token), []byte(p.Token(a.Hold, who))) {",
		To:    "if false && !hmac.Equal([]byte(a.Token), []byte(p.Token(a.Hold, who))) {",
		Tests: []string{"./pages:TestAnswerWithoutItsTokenIsRefused"},
	},
	{
		Name:  "pages: the token names the tenant",
		File:  "pages/pages.go",
		From:  "[]string{holdID, who.Owner, who.Tenant}",
		To:    "[]string{holdID, who.Owner}",
		Tests: []string{"./pages:TestAnswerWithoutItsTokenIsRefused", "./pages:TestTokenIsBoundToHoldOwnerAndTenant"},
	},
	{
		Name:  "pages: same origin",
		File:  "pages/pages.go",
		From:  "if !sameOrigin(r) {",
		To:    "if false && !sameOrigin(r) {",
		Tests: []string{"./pages:TestCrossSiteAnswerIsRefused"},
	},
	{
		Name:  "pages: a JSON answer with unknown fields",
		File:  "pages/pages.go",
		From:  "dec.DisallowUnknownFields()\n",
		To:    "",
		Tests: []string{"./pages:TestJSONAnswerIsReadWhole"},
	},
	{
		Name:  "release: the card's fingerprint",
		File:  "gate/release.go",
		From:  "if card.Fingerprint() != h.Fingerprint {",
		To:    "if false && card.Fingerprint() != h.Fingerprint {",
		Tests: []string{"./gate:TestConfirmedCardIsCheckedAgainstTheRecord", "./gate:TestMCPConfirmedCardIsCheckedAgain"},
	},
	{
		Name:  "release: the confirmed card is checked again",
		File:  "gate/release.go",
		From:  "if out := g.recheck(ctx, h, a); out != \"\" {",
		To:    "if out := g.recheck(ctx, h, a); false && out != \"\" {",
		Tests: []string{"./gate:TestConfirmedCardIsCheckedAgainstTheRecord"},
	},

	// The MCP front: a retry's requestState and what it redeems.
	{
		Name:  "mcp: the requestState's signature",
		File:  "gate/mcp.go",
		From:  "if !hmac.Equal(got, m.Sum(nil)) {",
		To:    "if false && !hmac.Equal(got, m.Sum(nil)) {",
		Tests: []string{"./gate:TestMCPStateIsBoundToTheCall"},
	},
	{
		Name:  "mcp: the requestState's person",
		File:  "gate/mcp.go",
		From:  "case !hmac.Equal([]byte(st.Person), []byte(g.personMAC(f.person))):",
		To:    "case false && !hmac.Equal([]byte(st.Person), []byte(g.personMAC(f.person))):",
		Tests: []string{"./gate:TestMCPStateIsBoundToThePerson"},
	},
	{
		Name:  "mcp: the requestState's person names the tenant",
		File:  "gate/mcp.go",
		From:  "fmt.Fprintf(m, \"person\\x00%q\\x00%q\", p.Tenant, p.Owner)",
		To:    "fmt.Fprintf(m, \"person\\x00%q\\x00%q\", \"\", p.Owner)",
		Tests: []string{"./gate:TestMCPStateIsBoundToThePerson"},
	},
	{
		Name:  "mcp: the requestState's tool",
		File:  "gate/mcp.go",
		From:  "case st.Tool != c.Name:",
		To:    "case false && st.Tool != c.Name:",
		Tests: []string{"./gate:TestMCPStateIsBoundToTheCall"},
	},
	{
		Name:  "mcp: the requestState's arguments",
		File:  "gate/mcp.go",
		From:  "if d, err := argsDigest(c.Arguments); err != nil || d != st.Digest {",
		To:    "if _, err := argsDigest(c.Arguments); err != nil {",
		Tests: []string{"./gate:TestMCPStateIsBoundToTheCall"},
	},
	{
		Name:  "mcp: the ticket matches the requestState",
		File:  "gate/mcp.go",
		From:  "if t.Kind != store.KindTicket || t.Owner != f.person.Owner || t.Tenant != f.person.Tenant || t.Action != c.Name || t.Policy != f.policyKey {",
		To:    "if false {",
		Tests: []string{"./gate:TestMCPStateMustMatchItsTicket", "./gate:TestMCPMismatchedStateUsesNothing"},
	},
	{
		Name:  "mcp: the ticket is a ticket",
		File:  "gate/mcp.go",
		From:  "if t.Kind != store.KindTicket || t.Owner != f.person.Owner ||",
		To:    "if t.Owner != f.person.Owner ||",
		Tests: []string{"./gate:TestMCPMismatchedStateUsesNothing"},
	},
	{
		Name:  "mcp: the ticket's owner",
		File:  "gate/mcp.go",
		From:  "if t.Kind != store.KindTicket || t.Owner != f.person.Owner || t.Tenant",
		To:    "if t.Kind != store.KindTicket || t.Tenant",
		Tests: []string{"./gate:TestMCPStateMustMatchItsTicket"},
	},
	{
		Name:  "mcp: the ticket backs the requestState's kind",
		File:  "gate/mcp.go",
		From:  "return ticketKind(t) == kind",
		To:    "return true",
		Tests: []string{"./gate:TestMCPMismatchedStateUsesNothing"},
	},
	{
		Name:  "mcp: the ticket's card is the caller's",
		File:  "gate/mcp.go",
		From:  "h.Protocol != ProtocolMCP || h.Owner != f.person.Owner || h.Tenant != f.person.Tenant || h.Action != c.Name {",
		To:    "h.Protocol != ProtocolMCP || h.Action != c.Name {",
		Tests: []string{"./gate:TestMCPTicketNamesTheCallersOwnCard"},
	},
	{
		Name:  "mcp: a form's retry goes on only under its action's version",
		File:  "gate/mcp.go",
		From:  "\t\tif moved := g.versionsMoved(t); moved != \"\" {",
		To:    "\t\tif moved := g.versionsMoved(t); false && moved != \"\" {",
		Tests: []string{"./gate:TestMCPPolicyReloadedBetweenFormAndAnswer"},
	},
	{
		Name:  "mcp: a relayed retry goes on only under its action's version",
		File:  "gate/mcp.go",
		From:  "\n\tif moved := g.versionsMoved(t); moved != \"\" {",
		To:    "\n\tif moved := g.versionsMoved(t); false && moved != \"\" {",
		Tests: []string{"./gate:TestMCPPolicyReloadedDuringServerQuestion"},
	},
	{
		Name:  "mcp: a confirmed card's retry goes on only under its action's version",
		File:  "gate/mcp.go",
		From:  "if moved := g.policyMoved(h); moved != \"\" {",
		To:    "if moved := g.policyMoved(h); false && moved != \"\" {",
		Tests: []string{"./gate:TestMCPPolicyReloadedBetweenConfirmAndRetry"},
	},
	{
		Name:  "mcp: a retry of the gate's is decided when its tool is no longer declared",
		File:  "caddymodule/mcp.go",
		From:  "h.policy.Action(tool) == nil && !retriesGateState(body)",
		To:    "h.policy.Action(tool) == nil",
		Tests: []string{"./e2e:TestMCPPolicyReloadedBetweenFormAndAnswer"},
	},
	{
		Name:  "mcp: answered by the caller",
		File:  "gate/mcp.go",
		From:  "if !confirmedByRightPerson(h, a) {",
		To:    "if false && !confirmedByRightPerson(h, a) {",
		Tests: []string{"./gate:TestMCPConfirmedBySomeoneElseDoesNotRun"},
	},
	{
		Name:  "mcp: the confirmed card is checked again",
		File:  "gate/mcp.go",
		From:  "if !g.sameCard(ctx, h, a) {",
		To:    "if false && !g.sameCard(ctx, h, a) {",
		Tests: []string{"./gate:TestMCPConfirmedCardIsCheckedAgain"},
	},

	// Answers the gate does not read as a call must not carry one (issue
	// 15 §2): shapes without an adapter, unknown paths, methods in any case.
	{
		Name:  "shapes: endpoint methods in any case",
		File:  "caddymodule/endpoints.go",
		From:  "method = upperMethod(method)",
		To:    "_ = upperMethod(method)",
		Tests: []string{"./caddymodule:TestEndpointMethodsInAnyCase"},
	},
	{
		Name:  "shapes: the request's method in any case",
		File:  "caddymodule/handler.go",
		From:  "method := upperMethod(r.Method)",
		To:    "method := r.Method",
		Tests: []string{"./e2e:TestLowerCaseMethods"},
	},
	{
		Name:  "shapes: unknown POST paths refused",
		File:  "caddymodule/handler.go",
		From:  "if ref := h.unknownPost(method, path, r.URL.Path, protocol); ref != nil {",
		To:    "if ref := h.unknownPost(method, path, r.URL.Path, protocol); false && ref != nil {",
		Tests: []string{"./e2e:TestUnknownPostPathsRefusedUnlessAllowed"},
	},
	{
		Name:  "shapes: other providers' paths refused on every route",
		File:  "caddymodule/endpoints.go",
		From:  "if !foreignPath(path) && (protocol != \"\" || knownPath(path)) {",
		To:    "if protocol != \"\" || knownPath(path) {",
		Tests: []string{"./caddymodule:TestUnknownPostPaths"},
	},
	{
		Name:  "shapes: an answer no adapter reads naming a gated tool",
		File:  "interceptor/guard.go",
		From:  "if name := g.search(p); name != \"\" {",
		To:    "if name := g.search(p); false && name != \"\" {",
		Tests: []string{"./interceptor:TestGuardWriter", "./e2e:TestNoShapeCarriesAGatedCall", "./e2e/differential:TestForeignShapesNeverCarryAGatedCall"},
	},
	{
		Name:  "shapes: a name cut between two writes",
		File:  "interceptor/guard.go",
		From:  "return g.names.Named(joined)",
		To:    "return \"\"",
		Tests: []string{"./interceptor:TestGuardWriter", "./e2e/differential:TestForeignShapesNeverCarryAGatedCall"},
	},
	{
		Name:  "shapes: a name spelt with escapes",
		File:  "interceptor/guard.go",
		From:  "if hasKeyEscape(b) {",
		To:    "if false && hasKeyEscape(b) {",
		Tests: []string{"./interceptor:TestNamesFindWholeNames"},
	},
	{
		Name:  "shapes: a JSON answer in the adapter's own shape",
		File:  "interceptor/writer.go",
		From:  "if err := checkShape(rw.adapter, rw.names, rw.buf.Bytes()); err != nil {",
		To:    "if err := checkShape(rw.adapter, rw.names, rw.buf.Bytes()); false && err != nil {",
		Tests: []string{"./interceptor:TestWriterRefusesForeignShapes", "./e2e:TestNoShapeCarriesAGatedCall"},
	},
	{
		Name:  "shapes: another provider's call key beside the adapter's",
		File:  "interceptor/guard.go",
		From:  "case isCallKey(name):\n\t\t\tforeign = true",
		To:    "case isCallKey(name):",
		Tests: []string{"./interceptor:TestEveryShapeThroughEveryAdapter"},
	},
	{
		Name:  "shapes: NDJSON and event-stream answers guarded",
		File:  "interceptor/writer.go",
		From:  "case foreignStreams[ct]:",
		To:    "case false && foreignStreams[ct]:",
		Tests: []string{"./interceptor:TestWriterRefusesForeignShapes", "./e2e/differential:TestForeignShapesNeverCarryAGatedCall"},
	},
	{
		Name:  "shapes: a stream event in another protocol's shape",
		File:  "interceptor/sseframe.go",
		From:  "if f.names == nil || f.names.Named(ev) == \"\" {",
		To:    "if true || f.names.Named(ev) == \"\" {",
		Tests: []string{"./interceptor:TestStreamRefusesForeignEvents", "./e2e:TestNoShapeCarriesAGatedCall"},
	},

	// The store: single use under racing answers.
	// Not the contract's ClaimRace: its 100 claims of one hold race too
	// briefly in memory, and without conflict detection it failed 3 runs
	// of 5.
	{
		Name:  "store: Badger's conflict detection",
		File:  "store/badger.go",
		From:  "WithDetectConflicts(true).",
		To:    "WithDetectConflicts(false).",
		Tests: []string{"./store:TestBadgerContract/ClaimStepRace", "./e2e:TestSecondPressAndConcurrentConfirms"},
	},
	{
		Name:  "store: Badger claims only a waiting hold",
		File:  "store/badgerholds.go",
		From:  "\t\tdefault:\n\t\t\treturn ErrAnswered\n\t\t}\n\t\th.State = Answered",
		To:    "\t\tdefault:\n\t\t}\n\t\th.State = Answered",
		Tests: []string{"./store:TestBadgerContract/ClaimRace", "./e2e:TestSecondPressAndConcurrentConfirms"},
	},
	{
		Name:  "store: PostgreSQL claims only a waiting hold",
		File:  "store/postgresholds.go",
		From:  "WHERE h.id = $1 AND h.state = 'waiting' AND",
		To:    "WHERE h.id = $1 AND",
		Tests: []string{"./store:TestPostgresContract/ClaimRace"},
	},
}
