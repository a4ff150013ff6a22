// Package forms decides when a model's read or write call becomes a form
// for the person, builds that form, and checks the person's answer.
//
// A call that leaves out required fields, or gives values the tool's schema
// refuses, is held as a form when its action sets ask_for_missing and a
// form can hold every such field (Plan). The form is MCP's form-mode
// elicitation, {mode, message, requestedSchema}, so any MCP renderer can
// draw it, plus one textarea hint a standard renderer ignores (Build). The
// person's answer is checked against the form as it reads now (Check,
// CheckJSON) and put over the model's arguments (Merge).
//
// # What the form holds
//
// The fields the model left out or got wrong, plus ask.confirm, in the
// order of the schema:
//
//	the schema's field                              the form's field
//	a string                                        text, with minLength and maxLength
//	  format email, uri (or url), date, date-time   the matching input (other formats
//	                                                and pattern are checked by the action)
//	  named in ask.textarea                         several lines (x-toolgate-textarea)
//	a string with an enum or ask.choices            one choice (enum; oneOf of const/title)
//	an integer or number                            a number with minimum and maximum
//	  with an enum or ask.choices                   one choice
//	a boolean                                       a checkbox: always true or false
//	a list of enum strings, or with ask.choices     several choices, minItems and maxItems
//	an object, a list of objects, a free list,      never asked: the call is refused
//	a union, a file (format binary, contentEncoding)
//	a secret (see Secret) or a forbidden key        never asked: the call is refused
//
// A nullable field (type [T, "null"], nullable: true, or anyOf of T and
// null) is optional in the form. MCP's restricted schema knows only string
// choices; a number field with an enum or choices keeps its type, with
// enum or oneOf, so its value stays a number.
//
// A field opens on the model's value when validation accepted it and it is
// safe to show (SafeToShow), else the fetched default, else ask.default,
// else the schema's default.
//
// # What it never does
//
// It does no I/O: choices_from and default_from are read by the gate, as
// the person, and handed to Build. It never returns an argument's value in
// a rule or error. Values are strings, json.Numbers, booleans and lists of
// them.
package forms
