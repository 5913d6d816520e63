"""The outbox: events fan out to delivery rows that workers claim, deliver and retry.

topics     the known event topics and the webhook `topics` field
backoff    when a failed delivery is tried again (exponential, jitter, Retry-After)
secrets    env:/file: secret references, read at delivery time
attempt    the Outcome of one attempt (timing, backoff), for every kind of delivery
urlguard   the URL and address rules (SSRF) and the resolver that applies them
sockstream a socket with TLS by the ssl module on it; trio waits only for readiness
backend    opens connections: only to an address it just vetted, TLS with the URL's name
http11     one keep-alive HTTP/1.1 connection, replies parsed by httptools (llhttp)
lanes      keep-alive connections: one per worker, reused per origin
transport  the httpx transport over those lanes
client     the delivery client (httpx): one per scheduler, capped reads, no redirects
errors     a failed exchange as a last_error an operator can act on
signing    the signature headers of a delivery request
webhooks   the webhook resource: field rules, host vetting, CRUD (admin; audited)
webhook_delivery  one webhook delivery: request, response cap, outcome
queue      the workers' SQL units: claim (SKIP LOCKED), record outcomes, purge
work       the operator's Work view: list, read, Replay (audited)
scheduler  the service: LISTEN/NOTIFY wake-up plus polling, workers, outcome recorder
"""
