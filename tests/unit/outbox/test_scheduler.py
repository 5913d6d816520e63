from ipamd.config import OutboxConfig
from ipamd.outbox.scheduler import prefetch_factor


def test_prefetch_keeps_every_claimed_job_inside_its_claim_timeout():
    for claim, request, expected in ((60, 10, 4), (25, 10, 1), (15, 10, 1), (3, 1, 2),
                                     (600, 10, 4)):
        config = OutboxConfig(claim_timeout_seconds=claim, request_timeout_seconds=request)
        factor = prefetch_factor(config)
        assert factor == expected
        # The last job of a full local queue starts after (factor - 1) rounds of requests
        # that all ran to their timeout, and must finish before its claim expires.
        assert factor * request < claim
