"""The outbox: events fan out to delivery rows that workers claim, deliver and retry.

topics     the known event topics and the webhook `topics` field
backoff    when a failed delivery is tried again (exponential, jitter, Retry-After)
secrets    env:/file: secret references, read at delivery time
attempt    the Outcome of one attempt (timing, backoff), for every kind of delivery
urlguard   the URL and address rules (SSRF) and the resolver that applies them
http11     the HTTP/1.1 client: keep-alive, connects only to the address it vetted
signing    the signature headers of a delivery request
webhook    one webhook delivery: request, response cap, outcome
queue      SQL units: claim (SKIP LOCKED), record outcomes, Work view, Replay, purge
scheduler  the service: LISTEN/NOTIFY wake-up plus polling, workers, outcome recorder
"""
