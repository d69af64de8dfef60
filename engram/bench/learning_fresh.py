"""A third learning workload, written apart from the other two and never tuned on.

Its author saw only the format of :mod:`engram.bench.learning_workload` (``Told``,
``Mistake``, ``MISTAKES``, ``UNRELATED``, ``NOISE``, ``REFUSED``, ``ALWAYS``), not its
content nor the check workload's, and wrote it once: other domains (ML and data science,
cloud cost, customer support, finance operations, security operations, documentation,
mobile releases, infrastructure as code), and repeats that vary the lesson as well as the
words, as a team's do (ADR 0118). Its figures, beside the check workload's, say how far the
loop's thresholds hold on mistakes nobody chose them for.
"""

from __future__ import annotations

from engram.bench.learning_workload import Mistake, Told

MISTAKES: tuple[Mistake, ...] = (
    Mistake(
        "data-leakage",
        (
            Told(
                "Validation AUC came out at 0.97 and the model fell apart once it met real"
                " traffic. Turned out the StandardScaler had been fit on the full dataset"
                " before we carved off the holdout.",
                "Split off the evaluation data first and fit any preprocessing on the"
                " training portion only.",
            ),
            Told(
                "The churn predictor looked brilliant offline, but one of its inputs was"
                " derived from the cancellation date itself, so it was peeking at the answer.",
                "Make sure every feature would actually be known at the moment the"
                " prediction is made.",
            ),
            Told(
                "leakage again: imputed missing ages with a mean that included the test rows",
                "Put imputation and scaling inside the cross-validation pipeline.",
            ),
        ),
        (
            "Build a classifier that predicts which subscribers will cancel next month.",
            "Normalise the numeric columns and score the fraud model with k-fold.",
            "Estimate how accurate the demand forecaster will be once it is deployed.",
        ),
    ),
    Mistake(
        "idle-gpu",
        (
            Told(
                "After the hyperparameter sweep finished on Friday, eight A100 nodes sat"
                " doing nothing over the long weekend. The invoice for that alone was"
                " around fourteen thousand dollars.",
                "Tear down training clusters the moment the job completes, and attach an"
                " automatic shutdown to them.",
            ),
            Told(
                "My notebook VM with a GPU stayed up for a whole month after I stopped using it.",
                "Give every dev machine an idle timeout that powers it off.",
            ),
        ),
        (
            "Spin up a few GPU boxes so we can try the larger transformer.",
            "Launch a Jupyter workstation for the new intern.",
            "Kick off the overnight grid search in the cloud.",
        ),
    ),
    Mistake(
        "support-dates",
        (
            Told(
                "I told a customer the export bug would be fixed by Friday. Engineering had"
                " no such plan, it wasn't fixed, and the customer escalated to their"
                " account manager.",
                "Never commit to a fix date in a reply; say the issue is with the team"
                " and that we will update them.",
            ),
            Told(
                "Assured the hospital client that SSO would ship in the next release. It"
                " slipped two sprints and they threatened to leave.",
                "Don't give customers delivery dates for roadmap items; only product can"
                " confirm those.",
            ),
        ),
        (
            "Answer the ticket from Acme asking when dark mode will be available.",
            "A client wants to know if the sync crash will be resolved before their audit"
            " next week; reply to them.",
            "Respond to the enterprise prospect asking whether bulk import is on the way.",
        ),
    ),
    Mistake(
        "payee-fraud",
        (
            Told(
                "Accounts payable wired 48,000 euros to a 'new' bank account that a"
                " supplier emailed us about. The supplier's mailbox had been compromised.",
                "Confirm any change to a payee's bank details by phoning a number we"
                " already have on file, never through the email asking for it.",
            ),
            Told(
                "vendor asked us to swap their IBAN, we did, money gone",
                "out-of-band verification for banking detail changes",
            ),
            Told(
                "An employee's salary went to an attacker after a 'please update my direct"
                " deposit' message that didn't actually come from the employee.",
                "Verify payroll account changes in person or through the HR portal before"
                " processing them.",
            ),
        ),
        (
            "Our logistics partner sent new remittance information; update it in the ERP"
            " before Friday's payment run.",
            "Process Jamie's request to have her pay sent to a different account starting"
            " this month.",
            "A contractor says they've switched banks; put the new account on their next"
            " invoice payment.",
        ),
    ),
    Mistake(
        "docs-unreleased",
        (
            Told(
                "The docs site described the v3 configuration flags while most users were"
                " still on v2, so half the week's tickets were people copying options that"
                " did not exist for them.",
                "Version the documentation and label which release each page applies to.",
            ),
            Told(
                "Published the tutorial the morning before the feature shipped; readers"
                " hit 404s on the endpoint it walked them through.",
                "Only merge docs for a feature once that feature is actually live.",
            ),
        ),
        (
            "Write the how-to guide for the new webhook filters.",
            "Update the installation page with the reworked CLI options.",
            "Publish the getting-started walkthrough for the upcoming plugin system.",
        ),
    ),
    Mistake(
        "staged-rollout",
        (
            Told(
                "Shipped 4.2 to 100% of Android users at once. A crash on Samsung devices"
                " hit everybody before anyone noticed the dashboards.",
                "Release to a small percentage of users first and watch crash rates"
                " before widening.",
            ),
            Told(
                "The iOS build went out to the entire user base and login broke for anyone"
                " still on iOS 15; Apple review meant we couldn't pull it back quickly.",
                "Use phased release and hold at a few percent until crash-free sessions"
                " look normal.",
            ),
        ),
        (
            "Push the new version of the Android app to the Play Store.",
            "Get build 5.0 of the iPhone app out to customers this week.",
            "Ship the redesigned checkout screen in the mobile client.",
        ),
    ),
    Mistake(
        "pii-sharing",
        (
            Told(
                "An analyst emailed a CSV with names, emails and phone numbers to an outside"
                " agency for a segmentation project.",
                "Strip or pseudonymise personal data before any dataset leaves the company.",
            ),
            Told(
                "Dumped the prod users table into the shared notebook bucket so the data"
                " scientists could explore it; the bucket turned out to be public-read.",
                "Analysts get anonymised extracts; raw customer records stay in the locked"
                " warehouse.",
            ),
            Told(
                "Screenshots of support tickets showing customers' home addresses ended up"
                " on slides at a conference talk.",
                "Redact identifying details from anything shown outside the company.",
            ),
        ),
        (
            "Send the marketing consultants a sample of our user table so they can build personas.",
            "Prepare a dataset from the CRM for the university research partnership.",
            "Give the freelance BI developer access to client records for the churn dashboard.",
        ),
    ),
    Mistake(
        "mixed-currency",
        (
            Told(
                "The quarterly revenue report summed euros, pounds and dollars as if they"
                " were one currency, and the board deck overstated growth by six percent.",
                "Convert every amount to a single reporting currency at a stated rate"
                " before aggregating.",
            ),
            Told(
                "Reconciliation was off by a factor of a hundred: the payments export is in"
                " cents and the general ledger is in whole units.",
                "Check the unit and currency of each source before combining figures.",
            ),
        ),
        (
            "Total up this month's sales across the UK, German and US stores.",
            "Match the Stripe payouts against the bank statement to close the books.",
            "Produce a revenue-per-region chart for the investor update.",
        ),
    ),
    Mistake(
        "iac-replace",
        (
            Told(
                "terraform apply destroyed and recreated the load balancer because a"
                " resource name changed; about twenty minutes of downtime.",
                "Read the plan output for anything marked for replacement before applying.",
            ),
            Told(
                "I pushed an infra change straight from my laptop and it rebuilt the NAT"
                " gateway, so every outbound call from the private subnets failed until it"
                " came back.",
                "Always review the diff of planned infrastructure changes and look for"
                " destroy-then-create actions.",
            ),
            Told(
                "CloudFormation swapped out our RDS instance during a stack update.",
                "Inspect the change set for resources that will be replaced.",
            ),
        ),
        (
            "Bump the instance size of the Redis cache in the IaC repo and roll it out.",
            "Rename the production storage buckets' identifiers through Terraform.",
            "Change the subnet CIDR for the staging network.",
        ),
    ),
    Mistake(
        "eval-slices",
        (
            Told(
                "Overall word error rate improved so we shipped the new speech model;"
                " accuracy for Scottish accents dropped by twenty points and nobody looked.",
                "Break evaluation results down by subgroup before approving a new model.",
            ),
            Told(
                "The recommender update raised average click-through, but brand-new users"
                " got noticeably worse suggestions. We had only checked the aggregate.",
                "Compare metrics per segment, not just the overall mean.",
            ),
        ),
        (
            "Decide whether the retrained credit-scoring model can replace the current one.",
            "Sign off on the new version of the spam filter.",
            "Report how the updated image tagger performs compared with last quarter's.",
        ),
    ),
)

#: Tasks no lesson of the workload applies to.
UNRELATED: tuple[str, ...] = (
    "Organise the team lunch for Friday.",
    "Proofread the blog post about our company values.",
    "Create slides summarising last quarter's hiring.",
    "Schedule interviews for the two data engineering candidates.",
    "Pick a name for the designers' new chat channel.",
    # Topics the lessons share (support, ML, finance, mobile, docs), no mistake to avoid.
    "Write a thank-you note to the customer who reported a typo in our help centre.",
    "Order new monitors for the machine learning team.",
    "Add the finance department's holiday calendar to the shared drive.",
    "Record a short demo video of the mobile app's onboarding for the sales team.",
)

#: Everyday memories the agents keep beside their scars.
NOISE: tuple[str, ...] = (
    "The data science guild meets on alternate Thursdays.",
    "Priya owns the feature store.",
    "Our training jobs run on a Kubernetes cluster in eu-west-1.",
    "The support team uses Zendesk for tickets.",
    "Month-end close usually takes four working days.",
    "The mobile app is built with React Native.",
    "The docs site is generated with MkDocs.",
    "Terraform state lives in an S3 bucket with locking in DynamoDB.",
    "The security team runs a phishing simulation every quarter.",
    "Tom prefers pull requests under 300 lines.",
    "The company's fiscal year starts in April.",
    "Experiment tracking is done in MLflow.",
    "The Android app has about 60% of our mobile users.",
    "Customer satisfaction score was 4.3 last quarter.",
    "The analytics warehouse is Snowflake.",
    "Legal needs two weeks to review a new vendor contract.",
    "The on-call engineer carries the pager from Monday to Monday.",
    "The style guide asks for sentence-case headings.",
    "The GPU quota for the research team is 32 cards.",
    "The finance team closes the books in NetSuite.",
)

#: Mistakes whose lesson the reviewer refuses (the rest are applied).
REFUSED = ("support-dates", "docs-unreleased")
#: The mistake whose lesson the reviewer marks always-on (tier 1).
ALWAYS = "pii-sharing"
