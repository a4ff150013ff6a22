package policies

import (
	"reflect"
	"strings"
)

// The types below are the policy file's shape, key by key. The loader takes
// the keys each mapping may hold from their yaml tags (keysOf), refusing any
// other, and policy.schema.json is generated from them (FileSchema, run by
// go generate), so the file format, the loader and the schema cannot drift
// apart. The loader still walks YAML nodes rather than decoding into these
// types, so its errors name the action, the key and the line; the types say
// what the schema allows, and each field's doc tag is the description an
// editor shows.
//
// Tags: yaml is the key; doc the description; required:"true" a key the
// loader refuses to go without. A field's Go type decides its schema, or
// the type's fileSchema method when it has one.

// policyFile is a whole policy file.
type policyFile struct {
	App           string                `yaml:"app" doc:"The app's name on the person's pages."`
	Actions       map[string]actionFile `yaml:"actions" required:"true" doc:"The actions (tools) the gate watches, keyed by the tool name exactly as the model calls it."`
	ForbiddenKeys fieldNames            `yaml:"forbidden_keys" doc:"Keys no form ever asks for, in any spelling (tenantId for tenant_id), in every action."`
	Notify        *notifyFile           `yaml:"notify" doc:"Where the gate POSTs a signed notice when a call is held and when its hold is settled, for every action that gives none of its own."`
	Mode          Mode                  `yaml:"mode" doc:"enforce (the default): calls are held, asked and refused as the actions say; shadow: every call passes untouched and what enforce would have done is logged, counted and audited. Each action may give its own."`
	DeclineNote   bool                  `yaml:"decline_note" doc:"The Decline of every destructive and external action's card comes with an optional note (at most 500 characters) the person writes to their assistant; the model reads it once and it is not kept. Each action may give its own. Default false."`
}

// actionFile is one action under actions.
type actionFile struct {
	Effect            Effect                       `yaml:"effect" required:"true" doc:"What the action does: read and write calls pass when complete; destructive and external calls wait for the person to confirm a card."`
	Description       string                       `yaml:"description" doc:"Notes for operators; the gate ignores them."`
	Schema            toolSchemaFile               `yaml:"schema" doc:"The JSON Schema of the tool's arguments (type: object; 2020-12 unless $schema says otherwise). Calls are checked against it before any card or form; formats are asserted."`
	Card              *cardFile                    `yaml:"card" doc:"What the person confirms. Required for destructive and external actions, refused for read and write."`
	Run               *runFile                     `yaml:"run" doc:"The action's HTTP endpoint, called once the person confirms. May be left out when only MCP routes gate the action (the MCP server runs it)."`
	Reply             localizedFile                `yaml:"reply" doc:"What the model reads after a successful run: a string, or one per language with an en entry."`
	TTL               ttlFile                      `yaml:"ttl" doc:"How long the person has to answer: whole seconds (1800) or a Go duration (30m), 1s to 24h; absent or 0 means the gate's default."`
	AskForMissing     bool                         `yaml:"ask_for_missing" doc:"Read and write only: a call that leaves out required fields, or gives values the schema refuses, becomes a form for the person instead of a refusal."`
	RequiredForAgents fieldNames                   `yaml:"required_for_agents" doc:"Fields agents must give although the schema leaves them optional: offered to the model as required and not nullable, and calls are checked that way."`
	Titles            map[string]map[string]string `yaml:"titles" doc:"Field labels by the person's language: field, then BCP 47 tag, then title. The schema's own title stands in for other languages."`
	Ask               *askFile                     `yaml:"ask" doc:"Shapes the forms of an ask_for_missing action."`
	ForbiddenKeys     fieldNames                   `yaml:"forbidden_keys" doc:"Keys no form of this action asks for, added to the file's."`
	MCP               *mcpFile                     `yaml:"mcp" doc:"How MCP routes treat the action."`
	Notify            notifyOrOff                  `yaml:"notify" doc:"Where notices about this action's holds go, instead of the file's notify; false sends none."`
	Mode              Mode                         `yaml:"mode" doc:"enforce or shadow, instead of the file's mode."`
	Approvers         *approversFile               `yaml:"approvers" doc:"Destructive and external only: who besides the owner may answer the card, by role or id, in the hold's tenant."`
	FourEyes          bool                         `yaml:"four_eyes" doc:"The owner may not confirm their own call (they may decline it); one of the approvers must. Needs approvers."`
	DeclineNote       bool                         `yaml:"decline_note" doc:"Destructive and external only: the card's Decline comes with an optional note (at most 500 characters) the person writes to their assistant; the model reads it once and it is not kept. Instead of the file's decline_note."`
	Rules             []ruleFile                   `yaml:"rules" doc:"Decide a call on what it does: CEL expressions over args, record, person, tool, protocol and now, tried in order; the first whose when holds decides (allow, ask or deny). When none holds, the effect decides."`
	OfferWhen         string                       `yaml:"offer_when" doc:"A CEL expression over person (id, tenant, roles): the tool is offered to, and its calls accepted from, only the persons for whom it holds. Absent, everyone."`
}

// ruleFile is one of an action's rules.
type ruleFile struct {
	Name      string         `yaml:"name" doc:"A short label for logs, the audit and policy explain."`
	When      string         `yaml:"when" required:"true" doc:"A CEL expression that gives a bool, over args (the validated arguments, typed from the schema), record (the card's record; only with card.record), person (id, tenant, roles), tool, protocol and now."`
	Then      ruleThenFile   `yaml:"then" required:"true" doc:"allow: the call passes to the app untouched; ask: the card waits for the person (with this rule's approvers, four_eyes and ttl); deny: refused, the model reads because."`
	Because   string         `yaml:"because" doc:"deny only, and required there: what the model reads; nothing ran."`
	Approvers *approversFile `yaml:"approvers" doc:"ask only: who besides the owner may answer the card, instead of the action's approvers."`
	FourEyes  *bool          `yaml:"four_eyes" doc:"ask only: the owner may not confirm; instead of the action's four_eyes. Needs approvers (the rule's or the action's)."`
	TTL       ttlFile        `yaml:"ttl" doc:"ask only: how long the person has to answer, instead of the action's ttl."`
}

// notifyFile is a notify key.
type notifyFile struct {
	URL     string            `yaml:"url" required:"true" doc:"The absolute http or https URL notices are POSTed to; may not name fields."`
	Headers map[string]string `yaml:"headers" doc:"Static headers sent with every notice. X-Toolgate-*, Idempotency-Key, Host, Content-Length and Transfer-Encoding are the gate's."`
}

// approversFile is an action's approvers key.
type approversFile struct {
	Roles fieldNames `yaml:"roles" doc:"Role names, as the pages' roles placeholder gives them; no commas or spaces."`
	IDs   fieldNames `yaml:"ids" doc:"Person ids, as the pages' answerer placeholder gives them."`
}

// cardFile is an action's card.
type cardFile struct {
	Reason   localizedFile      `yaml:"reason" required:"true" doc:"The sentence the person answers: a string, or one per language with an en entry (the en text is what the card is built and fingerprinted from, and what the model reads)."`
	Record   recordFile         `yaml:"record" doc:"The URL of the record the call acts on, read with GET as the person to fill the rows, and read again before the run to see it has not changed. May name top-level arguments in braces: {post}."`
	Rows     map[string]rowFile `yaml:"rows" doc:"Label: gjson path of its value in the record, shown under the reason in the file's order; or label: {path, label} to give the label per language. A path args.<field> shows a validated argument instead, as plain text, on a card without record only; every other path needs record."`
	Editable fieldNames         `yaml:"editable" doc:"Arguments the person may correct before confirming, shown as inputs opening on the model's values. Each must be a property of the action's schema that a form can hold, and may not be named by card.record or run.url."`
}

// rowMappingFile is a card row given as a mapping.
type rowMappingFile struct {
	Path  string        `yaml:"path" required:"true" doc:"The gjson path of the row's value in the record, or args.<field> for a validated argument (a card without record only)."`
	Label localizedFile `yaml:"label" doc:"The row's label: a string, or one per language with an en entry (the en text is what the card is built and fingerprinted from). Absent, the row's key is its label."`
}

// recordMappingFile is card.record given as a mapping.
type recordMappingFile struct {
	URL    string     `yaml:"url" required:"true" doc:"The record's URL; may name top-level arguments in braces."`
	Method recordVerb `yaml:"method" doc:"GET, the only method a record is read with."`
}

// runFile is an action's run.
type runFile struct {
	Method  runMethod         `yaml:"method" doc:"GET, POST (the default), PUT, PATCH or DELETE."`
	URL     string            `yaml:"url" required:"true" doc:"The endpoint's URL; may name top-level arguments in braces ({post}), escaped for their place. The scheme and host may not name fields."`
	Headers map[string]string `yaml:"headers" doc:"Static headers sent with every run. Idempotency-Key, X-Toolgate-*, Host, Content-Length and Transfer-Encoding are the gate's."`
}

// mcpFile is an action's mcp.
type mcpFile struct {
	Confirm bool `yaml:"confirm" doc:"Destructive and external only: a client that declares URL-mode elicitation may have the person confirm the card; false (the default) refuses such calls over MCP."`
}

// askFile is an action's ask.
type askFile struct {
	Message     string                 `yaml:"message" doc:"The one sentence above the form, plain text without a URL."`
	Confirm     fieldNames             `yaml:"confirm" doc:"Fields every form of the action shows for review. They never make a complete call wait."`
	Textarea    fieldNames             `yaml:"textarea" doc:"Text fields shown as several lines."`
	Choices     map[string]choicesFile `yaml:"choices" doc:"A field's choices, in order: a mapping of value to label, a list of one-key mappings, or a list of values. A label is a string, or one per language with an en entry."`
	Default     map[string]defaultFile `yaml:"default" doc:"The value a field opens on when the model gave none that validation accepted."`
	ChoicesFrom map[string]string      `yaml:"choices_from" doc:"Field: GET URL read as the person for its choices, a JSON list of {\"value\": ..., \"label\": ...}. May not name fields."`
	DefaultFrom map[string]string      `yaml:"default_from" doc:"Field: GET URL read as the person for its default, {\"value\": ...}. May not name fields."`
}

// keysOf returns the yaml keys of struct type t, in field order: the keys
// the loader accepts in the mapping t describes.
func keysOf(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if k := yamlKey(f); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// yamlKey returns the key of a field from its yaml tag, "" for none.
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// The keys the loader accepts in each mapping, read once from the types.
var (
	fileKeys          = keysOf(reflect.TypeFor[policyFile]())
	actionKeys        = keysOf(reflect.TypeFor[actionFile]())
	cardKeys          = keysOf(reflect.TypeFor[cardFile]())
	recordMappingKeys = keysOf(reflect.TypeFor[recordMappingFile]())
	rowMappingKeys    = keysOf(reflect.TypeFor[rowMappingFile]())
	runKeys           = keysOf(reflect.TypeFor[runFile]())
	mcpKeys           = keysOf(reflect.TypeFor[mcpFile]())
	askKeyNames       = keysOf(reflect.TypeFor[askFile]())
	notifyKeys        = keysOf(reflect.TypeFor[notifyFile]())
	approversKeys     = keysOf(reflect.TypeFor[approversFile]())
	ruleKeys          = keysOf(reflect.TypeFor[ruleFile]())
)
