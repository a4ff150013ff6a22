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
