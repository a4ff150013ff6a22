package testkit

// DeletePostAction is the destructive action the package tests' policies
// share, as the YAML of one entry under actions: a card built from the
// record at APP/posts/{post} (APP: the fake app's URL, replaced by each
// test), run as DELETE of the same URL. A policy may add keys to it at
// its indentation.
const DeletePostAction = `  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: Delete this post?
      record: APP/posts/{post}
      rows:
        Post: title
    run:
      method: DELETE
      url: APP/posts/{post}
    reply: Removed.
`

// SearchPostsAction is a read action asked for with a form, as the YAML
// of one entry under actions: the person types the query, and the fake
// app's answer at APP/search (which may echo it) is what the model reads.
// The tests of what the store, the audit and the admin API keep of a
// person's value share it.
const SearchPostsAction = `  search_posts:
    effect: read
    ask_for_missing: true
    schema:
      type: object
      properties:
        q: {type: string, title: Query}
      required: [q]
    run:
      url: APP/search
`
