"""The learning bench's scripted workload: mistakes told in different words, then new tasks.

Each :class:`Mistake` is one kind of error a team of agents keeps making. Its ``scars`` are
the same mistake recorded by different agents in their own words (what happened, and the
lesson they drew), written to share as little vocabulary as a person would naturally vary:
no template with swapped words. Its ``tasks`` are held apart: later requests, worded
differently again, for which the approved lesson applies. ``UNRELATED`` tasks need none of
the lessons. ``NOISE`` is everyday memory the agents keep beside their scars.
"""

from __future__ import annotations

from typing import NamedTuple


class Told(NamedTuple):
    """One recording of a mistake: what happened and the lesson, in one agent's words."""

    what: str
    lesson: str


class Mistake(NamedTuple):
    """One kind of mistake: its recordings and the later tasks it applies to."""

    key: str
    scars: tuple[Told, ...]
    tasks: tuple[str, ...]


MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "migration-backup",
        (
            Told(
                "Ran the schema migration on production and the orders table lost a column"
                " of data with no way back.",
                "Take a database snapshot before applying any schema migration.",
            ),
            Told(
                "The ALTER script dropped customer records in prod; nothing had been saved"
                " beforehand so the rows were gone.",
                "Back up the DB first whenever a migration changes tables.",
            ),
            Told(
                "Upgrading the postgres schema wiped invoices because no dump existed to"
                " restore from.",
                "Always dump the database prior to running migrations.",
            ),
        ),
        (
            "Apply the new migration that renames the accounts columns on the live database.",
            "We need to alter the users table in production tonight.",
            "Roll out the schema change for the billing service.",
        ),
    ),
    Mistake(
        "timezone",
        (
            Told(
                "Reports showed meetings an hour off because timestamps were stored in local time.",
                "Store every timestamp in UTC and convert only for display.",
            ),
            Told(
                "The scheduler fired jobs at the wrong hour after the daylight saving switch.",
                "Keep datetimes timezone-aware and normalised to UTC internally.",
            ),
        ),
        (
            "Add a created_at field to the event records.",
            "Build the calendar export that lists appointments by hour.",
            "Fix the cron trigger that runs the nightly invoice batch.",
        ),
    ),
    Mistake(
        "api-retries",
        (
            Told(
                "The payment provider returned 503 once and the checkout crashed outright.",
                "Wrap calls to external services in retries with exponential backoff.",
            ),
            Told(
                "A flaky upstream endpoint made the sync job die on the first transient error.",
                "Retry transient HTTP failures a few times, waiting longer between each attempt.",
            ),
            Told(
                "Our integration gave up instantly when the partner API hiccuped.",
                "Give remote requests a backoff-and-retry policy instead of failing on one error.",
            ),
        ),
        (
            "Write the client that fetches exchange rates from the bank's REST service.",
            "Integrate the shipping carrier's web API into the order flow.",
            "The webhook sender sometimes gets a gateway timeout from the CRM.",
        ),
    ),
    Mistake(
        "secrets",
        (
            Told(
                "An access key ended up in the git history and had to be rotated.",
                "Never commit credentials; load secrets from the environment or a vault.",
            ),
            Told(
                "The deploy token was pasted into config.yaml and pushed to the public repository.",
                "Keep passwords and tokens out of source files entirely.",
            ),
        ),
        (
            "Configure the service to talk to the S3 bucket with our AWS keys.",
            "Set up the SMTP password for the notification mailer.",
            "Add the Stripe API token to the project so checkout works.",
        ),
    ),
    Mistake(
        "pin-deps",
        (
            Told(
                "A new minor release of a library broke the build overnight.",
                "Pin dependency versions in the lock file.",
            ),
            Told(
                "CI started failing because pip pulled an incompatible upgrade of numpy.",
                "Freeze exact package versions so installs are reproducible.",
            ),
            Told(
                "The docker image rebuilt with a different framework release and"
                " behaved differently.",
                "Lock third-party requirements to known versions.",
            ),
        ),
        (
            "Add the requests package to the project's requirements.",
            "Create the Dockerfile for the worker image.",
            "Set up a fresh virtualenv for the analytics service.",
        ),
    ),
    Mistake(
        "tests-first",
        (
            Told(
                "Merged a refactor without running the suite and broke the login page.",
                "Run the full test suite before merging any change.",
            ),
            Told(
                "Pushed a quick fix straight to main; the unit checks would have caught"
                " the regression.",
                "Make sure all tests pass locally before you push.",
            ),
        ),
        (
            "Refactor the authentication module to use the new session store.",
            "Open a pull request that renames the helper functions.",
            "Ship the hotfix for the cart total rounding bug.",
        ),
    ),
    Mistake(
        "pagination",
        (
            Told(
                "The export only contained the first hundred customers; the API pages its results.",
                "Follow the next-page cursor until the listing is exhausted.",
            ),
            Told(
                "We missed most tickets because the endpoint returns them in batches"
                " and we read one.",
                "Loop over all pages of a paginated endpoint, not just the first response.",
            ),
            Told(
                "The sync stopped at 50 repositories since the remaining ones were on later pages.",
                "Keep requesting pages until no continuation token comes back.",
            ),
        ),
        (
            "Download every issue from the tracker's REST API into the warehouse.",
            "List all the users of the organisation through the admin endpoint.",
            "Fetch the complete order history for the yearly report.",
        ),
    ),
    Mistake(
        "input-validation",
        (
            Told(
                "A form accepted a negative quantity and the warehouse shipped nonsense.",
                "Validate user input at the boundary and reject out-of-range values.",
            ),
            Told(
                "Someone typed letters into the age box and the handler threw a stack trace.",
                "Check and sanitise every field a client submits before using it.",
            ),
        ),
        (
            "Build the signup endpoint that takes an email and a birth date.",
            "Add a quantity box to the cart page.",
            "Accept uploaded CSV rows into the product catalogue.",
        ),
    ),
    Mistake(
        "rate-limit",
        (
            Told(
                "The crawler hammered the vendor and our IP got banned for a day.",
                "Throttle outgoing requests to respect the provider's rate limits.",
            ),
            Told(
                "Bulk enrichment sent thousands of calls per minute and got HTTP 429 everywhere.",
                "Space out API calls and honour the Retry-After header.",
            ),
        ),
        (
            "Scrape the product prices from the supplier's website every hour.",
            "Enrich ten thousand leads through the geocoding service.",
            "Bulk update the contacts through the marketing platform's interface.",
        ),
    ),
    Mistake(
        "disk-logs",
        (
            Told(
                "The server went down because log files filled the volume.",
                "Rotate logs and cap their size.",
            ),
            Told(
                "Debug output grew to 40 GB and the machine ran out of storage.",
                "Configure logrotate with a retention limit for every service.",
            ),
            Told(
                "No space left on device: the application's traces were never cleaned up.",
                "Set a maximum size and automatic cleanup for log output.",
            ),
        ),
        (
            "Turn on verbose logging for the payment worker to debug the issue.",
            "Deploy the new service to the small VM with a 10 GB volume.",
            "Write the trace output of the crawler to files.",
        ),
    ),
    Mistake(
        "locale-encoding",
        (
            Told(
                "Names with accents came out garbled in the exported spreadsheet.",
                "Read and write text files explicitly as UTF-8.",
            ),
            Told(
                "The importer crashed on a café entry because it assumed ASCII.",
                "Declare the character encoding whenever opening files; never rely"
                " on the platform default.",
            ),
        ),
        (
            "Parse the supplier's product file that contains French descriptions.",
            "Export the customer list to CSV for the Berlin office.",
            "Load the translated strings for the Japanese release.",
        ),
    ),
    Mistake(
        "review-destructive",
        (
            Told(
                "An agent ran rm -rf on the wrong directory and deleted the shared build cache.",
                "Ask for confirmation before any command that deletes data.",
            ),
            Told(
                "A cleanup script purged the archive bucket because the path variable was empty.",
                "Double-check the target of destructive operations and dry-run them first.",
            ),
        ),
        (
            "Clean up the old artefacts in the release folder.",
            "Remove stale branches and the temporary buckets from last quarter.",
            "Purge the expired sessions from the cache server.",
        ),
    ),
)

#: Tasks no lesson of the workload applies to.
UNRELATED: tuple[str, ...] = (
    "Summarise the meeting notes from Tuesday for the product team.",
    "Draft a friendly reply thanking the customer for their feedback.",
    "Choose a colour palette for the marketing landing page.",
    "Translate the onboarding guide into Spanish.",
    "Plan the agenda for next week's retrospective.",
    # Topics the lessons share (payments, databases, APIs, logs), no mistake to avoid.
    "Write the release announcement for the new payment page.",
    "Book a meeting room for the database team's offsite.",
    "Add the new members of the API team to the org chart.",
    "Rename the chat channel of the logging working group.",
)

#: Everyday memories the agents keep beside their scars.
NOISE: tuple[str, ...] = (
    "The team standup moved to 10:30 on Mondays.",
    "Maria prefers short summaries with bullet points.",
    "The staging cluster runs three worker nodes.",
    "We use Postgres 16 for the main application database.",
    "The billing service is written in Go.",
    "Release notes are published every second Thursday.",
    "The design team works from the Lisbon office.",
    "The support inbox gets about two hundred tickets a week.",
    "Our CI runs on self-hosted runners.",
    "The analytics dashboard refreshes every fifteen minutes.",
    "Customers in Germany pay in euros.",
    "The mobile app supports iOS 16 and later.",
    "The product roadmap review is in March.",
    "Backups of the file server are kept for thirty days.",
    "The warehouse API is owned by the logistics team.",
    "The crawler runs from the Frankfurt region.",
    "Invoices are numbered per calendar year.",
    "The onboarding flow has four steps.",
    "The search page uses Elasticsearch.",
    "Our on-call rotation changes every Wednesday.",
)

#: Mistakes whose lesson the reviewer refuses (the rest are applied).
REFUSED = ("review-destructive", "locale-encoding")
#: The mistake whose lesson the reviewer marks always-on (tier 1).
ALWAYS = "secrets"
