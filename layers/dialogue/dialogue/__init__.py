"""The dialogue core: understanding, state, policy, fixed replies, realization jobs, storage and queues.

Shipped to the Lambdas as the `DialogueLayer`; pure logic modules import nothing from AWS.
"""
