"""The learning bench's check workload: other mistakes, other words, never tuned on.

The thresholds of the lessons loop are calibrated on :mod:`engram.bench.learning_workload`;
this second workload exists to check them on data they were not chosen on (ADR 0077). Its
ten kinds of mistake share no kind with the first workload, each is recorded two or three
times by different agents in their own words, and its thirty held-apart tasks are worded
differently again, mostly without naming the lesson's subject. It has the same shape as the
first (``MISTAKES``, ``UNRELATED``, ``NOISE``, ``REFUSED``, ``ALWAYS``), so the bench runs
either; the figure to quote is this one's.
"""

from __future__ import annotations

from engram.bench.learning_workload import Mistake, Told

MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "money-floats",
        (
            Told(
                "Invoice totals were off by a cent because prices were added as binary floats.",
                "Represent money as integer cents or Decimal, never as float.",
            ),
            Told(
                "The refund came out as 19.999999 euros and the bank rejected the transfer.",
                "Do currency arithmetic with exact decimal types and round once at the end.",
            ),
            Told(
                "Summing tax lines in JavaScript numbers drifted from the accountant's figures.",
                "Keep monetary amounts in fixed-point units, not floating point.",
            ),
        ),
        (
            "Compute the discount and VAT for each basket line.",
            "Write the function that splits a bill between several payers.",
            "Add up the monthly revenue for the finance dashboard.",
        ),
    ),
    Mistake(
        "query-in-loop",
        (
            Told(
                "The orders page issued one database query per row and took twelve seconds.",
                "Fetch related records in one batched query instead of one per item.",
            ),
            Told(
                "Rendering the author list hit the ORM a thousand times, once for every post.",
                "Eager-load associations rather than querying inside a loop.",
            ),
        ),
        (
            "Show each customer's last purchase on the accounts overview.",
            "Build the admin table listing projects with their owners' names.",
            "The comments view got slow once threads had hundreds of replies.",
        ),
    ),
    Mistake(
        "stale-cache",
        (
            Told(
                "Customers kept seeing the old price for an hour after marketing changed it.",
                "Invalidate the cached entry whenever the underlying record is written.",
            ),
            Told(
                "Profile edits did not show up because Redis still held the previous copy.",
                "Evict or refresh cache keys as part of every update path.",
            ),
        ),
        (
            "Let shop managers edit product descriptions from the back office.",
            "Add memoisation to the user settings lookup to cut latency.",
            "Allow admins to change a tenant's plan limits at runtime.",
        ),
    ),
    Mistake(
        "double-booking",
        (
            Told(
                "Two travellers were sold the same seat when they paid within the same second.",
                "Reserve scarce items inside a transaction with a row lock or a unique constraint.",
            ),
            Told(
                "Concurrent requests both read stock as one and each shipped the last unit.",
                "Guard check-then-write sequences against races with atomic updates.",
            ),
            Told(
                "Parallel workers claimed the same job from the table and ran it twice.",
                "Claim shared rows atomically, for example with SELECT FOR UPDATE SKIP LOCKED.",
            ),
        ),
        (
            "Implement ticket sales for the concert with a fixed number of places.",
            "Decrement the coupon's remaining uses when an order redeems it.",
            "Let several consumers pick tasks from the queue table.",
        ),
    ),
    Mistake(
        "big-bang-release",
        (
            Told(
                "The new checkout went live for everyone at once and a bug blocked all sales.",
                "Release risky changes behind a feature flag to a small share of users first.",
            ),
            Told(
                "A redesigned search shipped to the whole user base and had to be reverted"
                " in panic.",
                "Roll out gradually with a canary and a kill switch.",
            ),
        ),
        (
            "Launch the rewritten recommendation engine next Monday.",
            "Switch every customer over to the new pricing page.",
            "Replace the legacy login screen with the new single sign-on flow.",
        ),
    ),
    Mistake(
        "memory-blowup",
        (
            Told(
                "The importer read the whole 8 GB export into memory and the pod was OOM-killed.",
                "Stream large inputs in chunks instead of loading them at once.",
            ),
            Told(
                "Building the report as one giant list exhausted RAM on the worker.",
                "Process big datasets incrementally with iterators or pagination.",
            ),
        ),
        (
            "Convert last year's clickstream dump into Parquet files.",
            "Read the nightly transaction archive and compute per-store totals.",
            "Generate a zip of every uploaded photo for the customer's download.",
        ),
    ),
    Mistake(
        "duplicate-webhooks",
        (
            Told(
                "The provider redelivered a payment notification and we charged the card twice.",
                "Make event handlers idempotent by recording each delivery id.",
            ),
            Told(
                "A retried message created the same shipment two times in the warehouse.",
                "Deduplicate incoming messages with an idempotency key before acting.",
            ),
            Told(
                "At-least-once delivery from the queue sent customers duplicate welcome emails.",
                "Assume messages can arrive more than once and ignore repeats.",
            ),
        ),
        (
            "Handle the subscription-renewed callback from the billing provider.",
            "Consume order-placed events from the Kafka topic to reserve stock.",
            "Process the bank's transfer confirmations that arrive by HTTP POST.",
        ),
    ),
    Mistake(
        "sql-injection",
        (
            Told(
                "A search box let a user append OR 1=1 and dump the accounts table.",
                "Pass user values as bound query parameters, never by string formatting.",
            ),
            Told(
                "The report filter concatenated the name field into SQL and someone dropped"
                " a table.",
                "Use prepared statements with placeholders for any input in a query.",
            ),
        ),
        (
            "Add a filter by customer surname to the support lookup screen.",
            "Let analysts sort the sales grid by any column they pick.",
            "Write the endpoint that finds orders by the reference a client types.",
        ),
    ),
    Mistake(
        "no-timeout",
        (
            Told(
                "A call to the geolocation service hung forever and every worker thread got stuck.",
                "Set an explicit timeout on every outbound network call.",
            ),
            Told(
                "The health check waited indefinitely on a dead socket and the balancer kept"
                " routing to it.",
                "Never wait on a remote peer without a deadline.",
            ),
        ),
        (
            "Call the tax authority's validation service during checkout.",
            "Connect the mobile backend to the push notification gateway.",
            "Query the partner's inventory feed before confirming an order.",
        ),
    ),
    Mistake(
        "staging-emails",
        (
            Told(
                "A test run on staging mailed real customers a fake invoice.",
                "Route outgoing email from non-production environments to a sandbox.",
            ),
            Told(
                "QA triggered SMS reminders to actual patients from the copied database.",
                "Disable or redirect real notifications outside production.",
            ),
        ),
        (
            "Restore last night's production snapshot into the test environment.",
            "Try the new reminder campaign on the preview server.",
            "Give the contractors a staging copy with real user data to debug.",
        ),
    ),
)

#: Tasks no lesson of the check workload applies to; the last four share a lesson's topic.
UNRELATED: tuple[str, ...] = (
    "Write a thank-you note to the volunteers from the charity run.",
    "Pick three candidate dates for the summer party.",
    "Proofread the press release about our new office.",
    "Sketch the logo ideas for the hackathon t-shirt.",
    "Collect feedback on the onboarding survey wording.",
    "Interview a candidate for the finance team next week.",
    "Update the wiki page that lists the database team's members.",
    "Order lunch for the release party on Friday.",
    "Record a short video tour of the staging office for new hires.",
)

#: Everyday memories the agents keep beside their scars.
NOISE: tuple[str, ...] = (
    "The accounting team closes the books on the fifth of each month.",
    "Lena runs the weekly demo on Fridays.",
    "The message queue is RabbitMQ in the old stack and Kafka in the new one.",
    "Our main region is eu-west-1.",
    "The shop sells in eleven countries.",
    "Design reviews happen in the big meeting room.",
    "The mobile team ships every two weeks.",
    "Customer support works in two shifts.",
    "The data warehouse is refreshed at midnight.",
    "Most traffic arrives between six and nine in the evening.",
    "The legal team approves every new data processor.",
    "The company offsite is in September.",
    "Sales uses a CRM that syncs every hour.",
    "The intern cohort starts in July.",
    "The status page is hosted outside our cloud account.",
)

#: Mistakes whose lesson the reviewer refuses (the rest are applied).
REFUSED = ("memory-blowup", "staging-emails")
#: The mistake whose lesson the reviewer marks always-on (tier 1).
ALWAYS = "sql-injection"
