// Package policies loads and checks Toolgate's policy files: the list of
// actions (tools) the gate watches, what each one does, what a person is
// asked before a risky one runs, and where it runs once released.
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
//	        Status: status
//	    run:                     # the action's HTTP endpoint (required)
//	      method: DELETE         # GET, POST (default), PUT, PATCH or DELETE
//	      url: http://blog.internal/posts/{post}
//	      headers:               # optional static headers
//	        X-Blog-Source: toolgate
//	    reply: Removed.          # what the model reads after a successful run
//	    ttl: 30m                 # how long the person has to answer: whole seconds or
//	                             # a Go duration, 1s to 24h; absent or 0: the gate's default
//
// A schema's $ref may point only inside that schema; nothing is loaded from
// files or the network.
//
// Unknown keys, keys given twice, YAML merge keys (<<) and a second YAML
// document in the file are refused, so a typo cannot silently switch a check
// off.
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
