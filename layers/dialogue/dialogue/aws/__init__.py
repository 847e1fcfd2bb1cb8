"""The AWS adapters: the only modules of the layer that import boto3 or botocore.

The dialogue core (the rest of the `dialogue` package) decides; these modules keep and carry what it
decided, on DynamoDB (`table`, `turns`, `replies`, `queues`, `figures`, `audit`, composed in
`stores`), SQS (`sqs`) and ECS (`ecs`), with the functions' HTTP glue (`api`), Powertools' logger, metrics and tracer
(`observability`), and the factory the functions build them with (`factory`). The import contracts in
pyproject.toml ([tool.importlinter]) hold the line: `make lint` fails when the core imports from here.
"""
