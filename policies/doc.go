// Package policies loads and checks Toolgate's policy files: the list of
// actions (tools) the gate watches, what each one does, what a person is
// asked before a risky one runs or when a call leaves fields out, and
// where it runs once released.
//
// Every mistake in a policy file is found when the file is loaded (by
// `caddy validate` or `caddy run`), never while a person is waiting, and the
// error names the file, the action and the key:
//
//	policy /etc/toolgate/blog.yaml: action "delete_post": card.rows: a row needs card.record
//
// The package does no I/O beyond reading the policy file; records are
// fetched by the caller.
//
// # The policy file
//
// A policy file is YAML (JSON is accepted, since JSON is YAML):
//
//	app: Blog                    # optional: the app's name on the person's pages
//	forbidden_keys: [tenant_id]  # optional: keys no form ever asks for, in any
//	                             # spelling (tenantId), in every action
//	actions:
//	  delete_post:               # the tool name, exactly as the model calls it
//	    effect: destructive      # read | write | destructive | external (required)
//	    description: ...         # optional notes for operators; ignored
//	    schema:                  # optional JSON Schema (2020-12 unless $schema says) of
//	                             # the arguments: type: object; formats are checked
//	      type: object
//	      properties:
//	        post: {type: integer}
//	      required: [post]
//	    card:                    # required for destructive and external, refused otherwise
//	      reason: Delete this post? This cannot be undone.
//	      record: http://blog.internal/posts/{post}   # read with GET; needed for rows
//	      rows:                  # label: gjson path in the record; shown in file order
//	        Post: title
//	        Status:              # or path and a label per language (en required)
//	          path: status
//	          label: {en: Status, de: Status}
//	    run:                     # the action's HTTP endpoint; may be left out when only
//	                             # MCP routes gate the action (the MCP server runs it)
//	      method: DELETE         # GET, POST (default), PUT, PATCH or DELETE
//	      url: http://blog.internal/posts/{post}
//	      headers:               # optional static headers
//	        X-Blog-Source: toolgate
//	    reply: Removed.          # what the model reads after a successful run
//	    ttl: 30m                 # how long the person has to answer: whole seconds or
//	                             # a Go duration, 1s to 24h; absent or 0: the gate's default
//	    mcp:                     # how MCP routes treat it
//	      confirm: true          # destructive/external only: a 2026-07-28 client with
//	                             # URL-mode elicitation may have the person confirm the
//	                             # card; false (default): refused over MCP
//
// How the gate is operated, per action (mode and notify also at the top of
// the file, for every action that gives none):
//
//	mode: shadow               # enforce (default) | shadow: calls pass untouched;
//	                           # what enforce would do is logged and counted
//	notify:                    # POST a signed notice when a call is held and when
//	  url: https://hooks.internal/toolgate   # its hold is settled; no fields
//	  headers: {X-Team: blog}  # optional, static
//	actions:
//	  delete_post:
//	    notify: false          # no notices for this action
//	    approvers:             # destructive/external only: who may answer the
//	      roles: [editor]      # card besides the owner, in the owner's tenant:
//	      ids: [cy]            # a role the pages read, or a person id
//	    four_eyes: true        # the owner may not confirm (may decline); needs
//	                           # approvers
//
// A card's reason and an action's reply may be given per language instead
// of as one string:
//
//	card:
//	  reason:
//	    en: Delete this post? This cannot be undone.
//	    de: Diesen Beitrag löschen? Das kann nicht rückgängig gemacht werden.
//	reply: {en: The post was removed., de: Der Beitrag wurde gelöscht.}
//
// Keys are BCP 47 tags and en is required: the en text is what the card is
// built and fingerprinted from and what the model and the app read (the
// gate's own texts to the model are English). The person's page shows the
// text matching their Accept-Language, else the en one.
//
// A read or write action may ask the person for what the model left out
// (see package forms for what a form can hold):
//
//	draft_post:
//	  effect: write
//	  ask_for_missing: true      # an incomplete call becomes a form, not a refusal
//	  required_for_agents: [publish_on]  # agents must give these (required, not
//	                             # nullable); calls are checked that way
//	  titles:                    # field labels by BCP 47 locale; the schema's
//	    body: {en: Body, de: Inhalt}     # title stands in for other locales
//	  ask:                       # optional; needs ask_for_missing: true
//	    message: A few details for your post.   # plain text, no URL
//	    confirm: [title]         # always shown for review; never makes a complete
//	                             # call wait
//	    textarea: [body]         # text fields shown as several lines
//	    choices:                 # value: label, in order (or a list of one-key
//	      status: {draft: Draft, published: Published}  # mappings, or of values);
//	                             # a label may be per language: {en: Draft, de: Entwurf}
//	    default: {status: draft} # what a field opens on without the model's value
//	    choices_from: {owner: "http://app.internal/members"}  # GET as the person:
//	                             # [{"value": ..., "label": ...}]
//	    default_from: {city: "http://app.internal/me/city"}   # GET: {"value": ...}
//	  forbidden_keys: [internal_ref]     # added to the file's
//	  run: {url: http://app.internal/posts}
//
// Destructive and external actions never ask: ask_for_missing and ask are
// refused on them. When the action has a schema, the loader checks that
// every field ask, titles and required_for_agents name is one of its
// properties and one a form can hold (no objects, free lists, unions,
// files or secrets), that textarea names text fields, that choices are of
// the field's type and inside its enum, and that defaults fit their fields.
// The URLs of choices_from and default_from may not name fields: they are
// read as the person, never from the model's call. Without a schema, the
// gate runs the same checks (Action.CheckAsk) on the schema the request's
// tools give, and refuses the call when they fail.
//
// A schema's $ref may point only inside that schema; nothing is loaded from
// files or the network.
//
// Unknown keys, keys given twice, YAML merge keys (<<) and a second YAML
// document in the file are refused, so a typo cannot silently switch a check
// off.
//
// # The schema and versions
//
// policy.schema.json, in this package's folder, is the file's JSON Schema
// for editors (a "# yaml-language-server: $schema=" line). FileSchema
// generates it (go generate) from the types in filespec.go, whose yaml
// tags are also the keys the loader accepts; a test fails while the
// committed file is stale.
//
// Policy.Version is a short hash of the file's bytes, and Action.Version
// one of what decides an action's calls (its effect, schema, card,
// endpoint, MCP and form settings): holds record both, and the gate runs
// nothing for a hold whose action changed since.
//
// # URL templates
//
// run.url and card.record may name top-level arguments in braces:
// {post}. A value is escaped for where it stands (path or query), so the
// model cannot add path segments or query parameters, and the scheme and
// host may not name fields at all, so the model cannot choose where the
// request goes. When the action has a schema, every named field must be one
// of its properties.
package policies
